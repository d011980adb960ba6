"""Messages the TUI's workers post back to the UI thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.worker import Worker


class JobDone(Message):
    """A worker finished a job; `result` is what the pane needs to show it."""

    def __init__(self, job: str, result: Any, worker: Worker | None) -> None:
        super().__init__()
        self.job = job
        self.result = result
        self.worker = worker
