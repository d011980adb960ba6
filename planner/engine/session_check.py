"""A check for mypy, never run: the in-process session and the engine's proxy both implement the session's steps
(`planner.pipeline.api.SessionSteps`), so a step that drifts in one of them fails `make lint`.

It lives apart from both so that nothing a client imports (the TUI imports `RemoteSession`) pulls in the
in-process session, which imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.engine.remote import RemoteSession
    from planner.pipeline.api import SessionSteps
    from planner.pipeline.session import PlanSession


def both_implement_the_steps(local: PlanSession, remote: RemoteSession) -> tuple[SessionSteps, SessionSteps]:
    """Returns its arguments as the interface: where either does not fit it, mypy says which step differs."""
    return local, remote
