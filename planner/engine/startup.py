"""Start-up of `planner engine`: garbage collection waits until the first model load has ended,
`$PLANNER_CPUS` confines the engine to fewer cores, and the processes libraries start come from a
forkserver instead of being forks of the engine.

The engine's first long command is usually the model load that the interactive planner sends as soon
as the engine says hello. Loading a PyTorch model first imports PyTorch (and, for the FLOP count,
torch._dynamo): a few hundred thousand objects that live as long as the process. CPython's cyclic
garbage collector scans the growing heap again and again while they are created, holding the GIL as
it scans; pausing it until the load has ended took about a third off the load on the 2-core build
machine (benchmarks/tui_startup.py times the whole start-up). Memory is still freed by reference
counting meanwhile; only cycles wait.

Collection resumes when the first load (or `open`) ends, loaded or failed, or as soon as any other
long command starts: a plan or a profile runs with collection as usual. Only `serve_stdio` pauses it,
so an engine served on a thread inside another process (the TUI's tests) never changes that
process's collector. The TUI process has its own pause (planner.tui.startup), which the engine
cannot import.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading

_lock = threading.Lock()
_paused = False


def pause_gc() -> None:
    """Pause automatic garbage collection for the start-up (nothing changes if it is already off)."""
    global _paused
    with _lock:
        if gc.isenabled():
            gc.disable()
            _paused = True


def resume_gc() -> None:
    """Turn collection back on if `pause_gc` turned it off; calling it again, or without a pause, does nothing."""
    global _paused
    with _lock:
        if _paused:
            _paused = False
            gc.enable()


def gc_paused() -> bool:
    """Whether collection is paused by `pause_gc` and not yet resumed."""
    return _paused


CPUS_ENV = "PLANNER_CPUS"
"""Set it to N to confine the engine (and every process it starts) to its first N usable cores: a smaller
machine on the same host, for comparisons and tests. Detection then reports N cores."""


def limit_cpus() -> None:
    """Honour `$PLANNER_CPUS`: keep the first N of the cores this process may use."""
    text = os.environ.get(CPUS_ENV, "").strip()
    if not text or not hasattr(os, "sched_setaffinity"):
        return
    try:
        count = int(text)
    except ValueError:
        print(f"ignoring {CPUS_ENV}={text!r}: not a whole number of cores", file=sys.stderr)
        return
    usable = sorted(os.sched_getaffinity(0))
    if 0 < count < len(usable):
        os.sched_setaffinity(0, usable[:count])


def start_processes_from_a_server() -> None:
    """Make multiprocessing's default start method the forkserver, so a library's processes are never forks of the
    engine itself.

    The engine runs library code on several threads: a step's, the one reading commands, and OpenVINO's and NNCF's
    telemetry senders, which start a `multiprocessing.Process` with the default method for every event (about 25
    per Optimize round of the OpenVINO INT8 plugin). A fork copies the engine with each lock another thread held at
    that moment still held, and nothing will release it: the child hangs in its first use of that lock (the stdin
    multiprocessing closes as a child starts, the sys.stderr it flushes as it ends), for ever, with the engine's
    gigabytes. The forkserver is one small single-threaded process that the engine starts on first
    use and that forks each child from itself; it stays for the engine's life and reaps the children it forked.
    The planner's own measuring processes ask for "spawn" by name (planner.measure.worker) and are unaffected.
    """
    multiprocessing.set_start_method("forkserver", force=True)
