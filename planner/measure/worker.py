"""Run a function in a fresh spawned process, so a crash, hang or leak cannot take the planner down.

The child starts from ``_trampoline`` with only module and function *names* and pickled bytes of
the arguments: it applies ``env`` and ``sys_path`` first and only then imports the target and
unpickles its arguments, so variables such as OMP_NUM_THREADS are in place before the target's
imports (torch, numpy) create their thread pools. ``planner.measure`` loads its submodules
lazily so that importing this trampoline pulls in nothing heavy.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from enum import StrEnum
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

_TERMINATE_GRACE_S = 2.0
"""How long a terminated (SIGTERM) child gets before it is killed."""

_SIGNAL_HINTS: dict[str, str] = {
    "SIGKILL": "often the out-of-memory killer",
    "SIGSEGV": "a segmentation fault in native code",
    "SIGABRT": "native code aborted (a failed check or std::terminate)",
    "SIGBUS": "a bus error in native code (bad memory access or a truncated mapped file)",
    "SIGFPE": "an arithmetic fault in native code",
    "SIGILL": "an illegal instruction (a binary built for a newer CPU?)",
    "SIGTERM": "terminated from outside",
}


class WorkerStatus(StrEnum):
    """How an isolated call ended."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CRASHED = "crashed"


@dataclass(frozen=True)
class WorkerOutcome:
    """The result of ``run_isolated``: the value when ok, else a reason (and a traceback if raised)."""

    status: WorkerStatus
    value: Any
    reason: str
    traceback: str
    wall_s: float
    pid: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the call returned a value."""
        return self.status is WorkerStatus.OK


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _trampoline(conn: Connection, module_name: str, qualname: str, payload: bytes,
                env: dict[str, str] | None, sys_path: tuple[str, ...]) -> None:
    """Child entry point: apply env and sys.path, then import and call the target, send the result."""
    if env:
        os.environ.update(env)
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
        args, kwargs = pickle.loads(payload)
        value = target(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure of the target is reported to the parent
        _send(conn, ("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return
    try:
        data = pickle.dumps(("ok", value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - pickling can raise many types; the parent must hear of it
        _send(conn, ("failed", f"the return value could not be pickled: {type(exc).__name__}: {exc}",
                     traceback.format_exc()))
        return
    conn.send_bytes(data)
    conn.close()


def _crash_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            return f"killed by signal {-exitcode}"
        hint = _SIGNAL_HINTS.get(name)
        return f"killed by {name}: {hint}" if hint else f"killed by {name}"
    return f"exited with code {exitcode} without returning a result"


def _stop(process: multiprocessing.process.BaseProcess) -> None:
    if process.is_alive():
        process.terminate()
        process.join(_TERMINATE_GRACE_S)
    if process.is_alive():
        process.kill()
        process.join()


def _target_location(fn: Callable[..., Any]) -> tuple[str, str, str | None]:
    if inspect.ismethod(fn):
        raise TypeError(f"run_isolated needs a module-level function, not the bound method {fn!r}")
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module_name or not qualname or "<" in qualname:
        raise TypeError(f"run_isolated needs a module-level function, got {fn!r}")
    module = sys.modules.get(module_name)
    module_file = getattr(module, "__file__", None)
    module_dir = None
    # A top-level module found through a path entry the child may lack (pytest's rootdir insertion).
    if module_file and "." not in module_name and module_name != "__main__":
        module_dir = os.path.dirname(os.path.abspath(module_file))
    return module_name, qualname, module_dir


def run_isolated(
    fn: Callable[..., Any],
    /,
    *args: Any,
    timeout_s: float,
    env: dict[str, str] | None = None,
    sys_path: tuple[str, ...] | list[str] = (),
    **kwargs: Any,
) -> WorkerOutcome:
    """Call ``fn(*args, **kwargs)`` in a spawned process and report how it ended.

    ``fn`` must be importable by module and name; arguments and the return value must pickle.
    ``env`` is applied and ``sys_path`` prepended in the child before ``fn`` is imported.
    ``timeout_s`` counts from process start (interpreter start-up included). A KeyboardInterrupt
    while waiting stops the child and is re-raised.
    """
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    module_name, qualname, module_dir = _target_location(fn)
    paths = tuple(sys_path) + ((module_dir,) if module_dir else ())
    payload = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    # Not a daemon: daemonic processes may not start their own children (data loaders, compilers).
    process = ctx.Process(target=_trampoline, name=f"isolated:{qualname}",
                          args=(child_conn, module_name, qualname, payload, env, paths))
    started = time.perf_counter()
    try:
        process.start()
        # Close our copy of the child's end so its death shows up as end-of-file on ours.
        child_conn.close()
        deadline = started + timeout_s
        message: tuple[Any, ...] | None = None
        timed_out = False
        while message is None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                timed_out = True
                break
            ready = wait([parent_conn, process.sentinel], timeout=remaining)
            if parent_conn in ready:
                try:
                    # Receive before joining: a child blocked writing a large result never exits.
                    message = pickle.loads(parent_conn.recv_bytes())
                except EOFError:
                    break
            elif process.sentinel in ready:
                # Exited; anything it sent is already in the pipe.
                if parent_conn.poll():
                    continue
                break
        if timed_out:
            _stop(process)
            return WorkerOutcome(WorkerStatus.TIMEOUT, None, f"did not finish within {timeout_s:g} s",
                                 "", time.perf_counter() - started, process.pid)
        if message is None:
            process.join()
            return WorkerOutcome(WorkerStatus.CRASHED, None, _crash_reason(process.exitcode), "",
                                 time.perf_counter() - started, process.pid)
        process.join(_TERMINATE_GRACE_S)
        wall = time.perf_counter() - started
        if message[0] == "ok":
            return WorkerOutcome(WorkerStatus.OK, message[1], "", "", wall, process.pid)
        return WorkerOutcome(WorkerStatus.FAILED, None, message[1], message[2], wall, process.pid)
    finally:
        # Every way out, KeyboardInterrupt included, leaves no child behind.
        _stop(process)
        child_conn.close()
        parent_conn.close()
