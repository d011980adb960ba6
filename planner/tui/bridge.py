"""EventBridge: the engine's event sink, turning events from worker threads into UI messages."""

from __future__ import annotations

import threading

from textual.message import Message
from textual.message_pump import MessagePump

from planner.events import Event


class EngineEvents(Message):
    """Engine events are waiting in the bridge; the handler drains them all at once."""

    def __init__(self, bridge: EventBridge) -> None:
        super().__init__()
        self.bridge = bridge

    def drain(self) -> list[Event]:
        """Every event queued since the last drain."""
        return self.bridge.drain()


class EventBridge:
    """Forwards engine events to whichever pane started the running job.

    Events queue under a lock and at most one `EngineEvents` message is in flight: a chatty
    plugin log cannot flood the UI's message queue, because whatever arrives while a message
    waits is handed over with it when the pane drains the queue.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Event] = []
        self._posted = False
        self._target: MessagePump | None = None

    def attach(self, target: MessagePump | None) -> None:
        """Send future events to `target` (None drops them, e.g. between jobs)."""
        with self._lock:
            self._target = target
            self._pending.clear()
            self._posted = False

    def __call__(self, event: Event) -> None:
        with self._lock:
            target = self._target
            if target is None:
                return
            self._pending.append(event)
            if self._posted:
                return
            self._posted = True
        # post_message is thread safe: from a worker thread it hops onto the UI loop.
        target.post_message(EngineEvents(self))

    def drain(self) -> list[Event]:
        """Take every queued event; the next event posts a new message."""
        with self._lock:
            events, self._pending = self._pending, []
            self._posted = False
        return events
