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
    CANCELLED = "cancelled"  # only a Conversation: the caller's cancel was set while it waited


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


def _apply(env: dict[str, str] | None, sys_path: tuple[str, ...]) -> None:
    """In the child, before anything heavy is imported: set the caller's variables and path entries."""
    if env:
        os.environ.update(env)
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _call_target(module_name: str, qualname: str, payload: bytes) -> Any:
    """Import the target by name, unpickle its arguments (only now, after ``_apply``) and call it."""
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    args, kwargs = pickle.loads(payload)
    return target(*args, **kwargs)


def _trampoline(conn: Connection, module_name: str, qualname: str, payload: bytes,
                env: dict[str, str] | None, sys_path: tuple[str, ...]) -> None:
    """Child entry point: apply env and sys.path, then import and call the target, send the result."""
    _apply(env, sys_path)
    try:
        value = _call_target(module_name, qualname, payload)
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


def _conversation_trampoline(conn: Connection, module_name: str, qualname: str, payload: bytes,
                             env: dict[str, str] | None, sys_path: tuple[str, ...]) -> None:
    """Child entry point of a ``Conversation``: build a handler with the target, then answer requests.

    Like ``_trampoline``, env and sys.path are applied before the target is imported. The target
    returns a handler; the child says ``ready`` and then blocks on its pipe (no CPU) for each
    request, answering ``handler(request)``. A failure ends the conversation: the handler's state
    may be broken. A stop request, or the parent's end closing, ends it quietly.
    """
    try:
        _apply(env, sys_path)
        try:
            handler = _call_target(module_name, qualname, payload)
        except Exception as exc:  # noqa: BLE001 - every failure of the target is reported to the parent
            _send(conn, ("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            return
        _send(conn, ("ready",))
        while True:
            try:
                request = pickle.loads(conn.recv_bytes())
            except EOFError:
                return  # the parent is gone: nobody is left to answer
            if request[0] != "ask":
                return
            try:
                answer = pickle.dumps(("ok", handler(request[1])), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - the handler (or pickling its answer) may raise anything
                _send(conn, ("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
                return
            conn.send_bytes(answer)
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reaches the whole process group; the parent stops this child and
        # reports the interrupt, so a traceback from here would only be noise.
        return
    finally:
        conn.close()


def _oom_count() -> tuple[int, int] | None:
    """(OOM kills, memory limit) of the cgroup that limits this process, or None (no limit, or unreadable)."""
    try:
        from planner.hardware.memory_limits import oom_kill_count

        return oom_kill_count()
    except Exception:  # noqa: BLE001 - a hint for a crash message must never become a failure of its own
        return None


def _crash_reason(exitcode: int | None, oom_before: tuple[int, int] | None = None) -> str:
    """Why the child ended without a result; given the cgroup's OOM count at its start, whether the OOM killer did."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            return f"killed by signal {-exitcode}"
        if name == "SIGKILL" and oom_before is not None:
            now = _oom_count()
            if now is not None and now[0] > oom_before[0]:
                from planner import units

                return (f"killed by SIGKILL: the out-of-memory killer (the kill count of the cgroup that limits the "
                        f"planner to {units.size(now[1])} rose while it ran)")
        hint = _SIGNAL_HINTS.get(name)
        return f"killed by {name}: {hint}" if hint else f"killed by {name}"
    return f"exited with code {exitcode} without returning a result"


def _stop(process: multiprocessing.process.BaseProcess) -> None:
    from planner.supervise import end_process

    end_process(process, grace_s=_TERMINATE_GRACE_S)


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
    oom_before = _oom_count()
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
            return WorkerOutcome(WorkerStatus.CRASHED, None, _crash_reason(process.exitcode, oom_before), "",
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


_CANCEL_POLL_S = 0.05
"""How often a Conversation waiting on its child checks the caller's cancel."""


class Conversation:
    """A spawned worker that keeps its state between requests: an opened candidate timed in turns, say.

    ``factory(*args, **kwargs)`` runs in the child exactly like a ``run_isolated`` target: ``env``
    is applied and ``sys_path`` prepended first, and the arguments are unpickled only then. It
    returns a handler (a picklable-answer callable); each ``ask(request)`` runs ``handler(request)``
    in the child and brings its value back. Between requests the child blocks on its pipe.

    Isolation is run_isolated's: a failure (exception) in the factory or a handler, a crash, a
    timeout or a cancel ends the conversation, stops the child, and comes back as a WorkerOutcome
    with a plain reason; nothing is raised. An outcome's ``wall_s`` counts from ``start``. Use it
    as a context manager (or call ``stop``) so the child never outlives the caller, KeyboardInterrupt
    included.
    """

    def __init__(self, factory: Callable[..., Callable[[Any], Any]], /, *args: Any,
                 env: dict[str, str] | None = None, sys_path: tuple[str, ...] | list[str] = (),
                 **kwargs: Any) -> None:
        module_name, qualname, module_dir = _target_location(factory)
        paths = tuple(sys_path) + ((module_dir,) if module_dir else ())
        payload = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        ctx = multiprocessing.get_context("spawn")
        self._conn, child_conn = ctx.Pipe(duplex=True)
        self._child_conn: Connection | None = child_conn
        # Not a daemon, as in run_isolated: daemonic processes may not start children of their own.
        self._process = ctx.Process(target=_conversation_trampoline, name=f"conversation:{qualname}",
                                    args=(child_conn, module_name, qualname, payload, env, paths))
        self._started: float | None = None
        self._ended: WorkerOutcome | None = None
        self._ready = False
        self._oom_before: tuple[int, int] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id (None before ``start``)."""
        return self._process.pid

    @property
    def ended(self) -> WorkerOutcome | None:
        """How the conversation ended (None while it goes on)."""
        return self._ended

    def start(self) -> None:
        """Spawn the child; the factory runs there while the caller goes on (see ``wait_ready``)."""
        if self._started is not None:
            raise RuntimeError("this conversation was already started")
        self._oom_before = _oom_count()
        self._started = time.perf_counter()
        self._process.start()
        # Close our copy of the child's end so its death shows up as end-of-file on ours.
        if self._child_conn is not None:
            self._child_conn.close()
            self._child_conn = None

    def wait_ready(self, *, timeout_s: float, cancel: Callable[[], bool] | None = None) -> WorkerOutcome:
        """Wait until the factory has returned; ``timeout_s`` counts from ``start`` (start-up included).

        Several conversations started together can be waited for one after another: each deadline
        counts from its own start, so waiting on one costs the others nothing.
        """
        if self._started is None:
            raise RuntimeError("start the conversation before waiting for it")
        if self._ended is not None:
            return self._ended
        if self._ready:
            return self._outcome(WorkerStatus.OK, None)
        message = self._receive(self._started + timeout_s, cancel,
                                f"did not start within {timeout_s:g} s")
        if isinstance(message, WorkerOutcome):
            return message
        if message[0] == "ready":
            self._ready = True
            return self._outcome(WorkerStatus.OK, None)
        return self._end_with(message)

    def ask(self, request: Any, *, timeout_s: float, cancel: Callable[[], bool] | None = None) -> WorkerOutcome:
        """Send one request and wait up to ``timeout_s`` for the handler's answer (waits for start-up first)."""
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if not self._ready:
            ready = self.wait_ready(timeout_s=timeout_s, cancel=cancel)
            if not ready.ok:
                return ready
        if self._ended is not None:
            return self._ended
        try:
            self._conn.send_bytes(pickle.dumps(("ask", request), protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return self._finish(WorkerStatus.CRASHED, _crash_reason(self._reap(), self._oom_before))
        message = self._receive(time.perf_counter() + timeout_s, cancel,
                                f"did not answer within {timeout_s:g} s")
        if isinstance(message, WorkerOutcome):
            return message
        if message[0] == "ok":
            return self._outcome(WorkerStatus.OK, message[1])
        return self._end_with(message)

    def stop(self) -> None:
        """End the conversation: ask the child to leave, then terminate it if it does not (idempotent)."""
        if self._started is not None and self._process.is_alive():
            try:
                self._conn.send_bytes(pickle.dumps(("stop",), protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                pass  # already gone or not listening: terminated below
            # A child waiting between requests leaves at once; one still starting or busy is terminated.
            self._process.join(_TERMINATE_GRACE_S / 4 if self._ready else _CANCEL_POLL_S)
        if self._started is not None:
            _stop(self._process)
        if self._child_conn is not None:
            self._child_conn.close()
            self._child_conn = None
        self._conn.close()

    def __enter__(self) -> Conversation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _receive(self, deadline: float, cancel: Callable[[], bool] | None,
                 timeout_reason: str) -> tuple[Any, ...] | WorkerOutcome:
        """The child's next message, or the outcome that ended the conversation while waiting for it."""
        while True:
            if cancel is not None and cancel():
                return self._finish(WorkerStatus.CANCELLED, "cancelled")
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return self._finish(WorkerStatus.TIMEOUT, timeout_reason)
            slice_s = min(remaining, _CANCEL_POLL_S) if cancel is not None else remaining
            ready = wait([self._conn, self._process.sentinel], timeout=slice_s)
            if self._conn in ready:
                try:
                    # Received before anything else: a child blocked writing a large answer never exits.
                    return pickle.loads(self._conn.recv_bytes())
                except EOFError:
                    return self._finish(WorkerStatus.CRASHED, _crash_reason(self._reap(), self._oom_before))
            elif self._process.sentinel in ready and not self._conn.poll():
                return self._finish(WorkerStatus.CRASHED, _crash_reason(self._reap(), self._oom_before))

    def _reap(self) -> int | None:
        self._process.join(_TERMINATE_GRACE_S)
        return self._process.exitcode

    def _end_with(self, message: tuple[Any, ...]) -> WorkerOutcome:
        # The child reported a failure and is leaving; its state is not trusted with another request.
        return self._finish(WorkerStatus.FAILED, message[1], message[2])

    def _finish(self, status: WorkerStatus, reason: str, trace: str = "") -> WorkerOutcome:
        self._ended = self._outcome(status, None, reason, trace)
        _stop(self._process)
        return self._ended

    def _outcome(self, status: WorkerStatus, value: Any, reason: str = "", trace: str = "") -> WorkerOutcome:
        wall = time.perf_counter() - self._started if self._started is not None else 0.0
        return WorkerOutcome(status, value, reason, trace, wall, self._process.pid)
