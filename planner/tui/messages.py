"""Messages the TUI's workers and engine bridge post back to the UI thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.worker import Worker

    from planner.events import Event
    from planner.tui.bridge import EventBridge


class EngineEvents(Message):
    """Engine events are waiting in the bridge; the handler drains them all at once."""

    def __init__(self, bridge: EventBridge) -> None:
        super().__init__()
        self.bridge = bridge

    def drain(self) -> list[Event]:
        """Every event queued since the last drain."""
        return self.bridge.drain()


class JobDone(Message):
    """A worker finished a job; `result` is what the pane needs to show it."""

    def __init__(self, job: str, result: Any, worker: Worker | None) -> None:
        super().__init__()
        self.job = job
        self.result = result
        self.worker = worker
