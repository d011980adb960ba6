"""Pipeline events: how the engine reports progress without knowing who is listening."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Event:
    """One progress event: a stage started/finished, a candidate measured, or a log line."""

    kind: str  # "stage" | "stage_done" | "candidate" | "candidate_done" | "log" | "warning"
    # | "budget" (the time budget cut something)
    message: str
    stage: str = ""
    index: int | None = None
    total: int | None = None
    data: dict = field(default_factory=dict)


EventSink = Callable[[Event], None]


def null_sink(event: Event) -> None:
    """An event sink that drops everything."""


class CancelToken:
    """A cancel flag shared between a UI (or Ctrl-C handler) and the engine."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the engine to stop at the next safe point."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancel was requested."""
        return self._event.is_set()

    def __call__(self) -> bool:
        return self._event.is_set()
