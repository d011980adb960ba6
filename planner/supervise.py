"""Ending the processes the planner starts: the one place that terminates, waits and kills.

A measuring worker (multiprocessing), the engine or a fleet run (subprocess.Popen), the engine's leftover
children (psutil) and a dead engine's process group are all ended here, each bounded in time, so a change in
how the planner stops a process is made once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any, Iterable


def _alive(process: Any) -> bool:
    if hasattr(process, "poll"):  # subprocess.Popen
        return process.poll() is None
    if hasattr(process, "is_alive"):  # multiprocessing.Process
        return bool(process.is_alive())
    return bool(process.is_running())  # psutil.Process


def _wait(process: Any, timeout_s: float) -> None:
    import psutil

    with contextlib.suppress(subprocess.TimeoutExpired, psutil.TimeoutExpired, psutil.Error):
        if hasattr(process, "join"):  # multiprocessing.Process
            process.join(timeout_s)
        else:  # subprocess.Popen, psutil.Process
            process.wait(timeout_s)


def end_process(process: Any, *, grace_s: float) -> None:
    """End one process: SIGTERM, up to `grace_s` to exit, then SIGKILL and up to `grace_s` more (bounded either
    way). Takes a subprocess.Popen, a multiprocessing.Process or a psutil.Process; one already gone is left be."""
    import psutil

    for stop in ("terminate", "kill"):
        if not _alive(process):
            return
        with contextlib.suppress(ProcessLookupError, psutil.Error):
            getattr(process, stop)()
        _wait(process, grace_s)


def end_processes(processes: Iterable[Any], *, wait_s: float) -> None:
    """Kill processes at once (psutil.Process: leftovers no one waits on) and wait up to `wait_s` for them all."""
    import psutil

    gone = list(processes)
    for process in gone:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(gone, timeout=wait_s)


def end_group(pid: int) -> None:
    """SIGKILL a whole process group (a dead engine's measuring processes share its group); gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)
