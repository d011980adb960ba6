"""The one cancellable wait: a plan that runs elsewhere (an engine process, a host, a fleet of hosts) is waited for
here, so Ctrl-C means the same wherever the plan runs.

The first Ctrl-C (or a `cancel` event another thread sets) asks the plan to stop and keep what it measured, and the
wait goes on for that; a second Ctrl-C stops waiting. The wait is on an Event, never `Thread.join`: a Ctrl-C that
lands inside `join` can leave the thread looking finished and lose the answer.
"""

from __future__ import annotations

import threading
from typing import Callable

from planner.engine.protocol import Answer, Error
from planner.errors import PlannerError

POLL_S = 0.2
"""How often the wait looks at `cancel` (Ctrl-C arrives at once)."""


def wait_interruptible(done: threading.Event, *, on_interrupt: Callable[[], None],
                       cancel: threading.Event | None = None) -> bool:
    """Wait until `done` is set. The first Ctrl-C, or `cancel` being set, calls `on_interrupt` once and waits on;
    a second Ctrl-C raises KeyboardInterrupt. Returns whether the wait was interrupted."""
    interrupted = False
    while not done.is_set():
        try:
            done.wait(POLL_S)
            if cancel is not None and cancel.is_set() and not interrupted:
                interrupted = True
                on_interrupt()
        except KeyboardInterrupt:
            if interrupted:
                raise  # a second Ctrl-C: stop waiting for what the plan keeps
            interrupted = True
            on_interrupt()
    return interrupted


def await_answer(work: Callable[[], Answer | None], *, on_interrupt: Callable[[], None],
                 cancel: threading.Event | None = None) -> tuple[Answer | None, bool]:
    """Run `work` (a command sent to an engine, which returns its answer) on a thread and wait for it, cancellably.
    Returns the answer (an `Error` when the engine refused or the command failed; None when the engine's stream
    ended first: its client's `death` says why) and whether the wait was interrupted."""
    box: list[Answer | None] = [None]
    done = threading.Event()

    def run() -> None:
        from planner.engine.client import EngineDiedError

        try:
            box[0] = work()
        except EngineDiedError:
            box[0] = None
        except PlannerError as exc:
            box[0] = Error(problem=exc.problem, fix=exc.fix, kind=type(exc).__name__)
        finally:
            done.set()

    threading.Thread(target=run, name="engine-wait", daemon=True).start()
    interrupted = wait_interruptible(done, on_interrupt=on_interrupt, cancel=cancel)
    return box[0], interrupted


__all__ = ["await_answer", "wait_interruptible"]
