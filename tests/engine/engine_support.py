"""Engine test support: a client that keeps every message it hears, and a command run in the background.

The tests drive a real `planner engine` process (EngineClient.spawn); nothing here stands in for it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import psutil

from planner.engine.client import EngineClient, EngineDiedError
from planner.engine.protocol import Bye, Command, EngineMessage, Error, Result, State
from planner.events import Event

WAIT_S = 120.0
"""The longest a test waits for an event or an answer (a busy 2-core machine measures slowly)."""


class RecordingClient(EngineClient):
    """An EngineClient that also keeps every message it routes, in order (what went over the wire), and the results
    and state the answers' states built, as a client mirroring the session holds them."""

    heard: list[EngineMessage]
    deaths: list[EngineDiedError]

    def _route(self, message: EngineMessage) -> None:
        self.__dict__.setdefault("heard", []).append(message)
        if isinstance(message, (Result, Error)) and message.state is not None:
            data = self.__dict__.setdefault("results_data", {})
            data.update(message.state.changed)
            for key in message.state.removed:
                data.pop(key, None)
            self.__dict__["last_state"] = message.state
        super()._route(message)

    def messages(self, kind: str, command_id: int | None = None) -> list[Any]:
        """The messages of one type heard so far (of one command, when `command_id` is given)."""
        return [m for m in self.__dict__.get("heard", [])
                if m.__struct_config__.tag == kind and (command_id is None or getattr(m, "id", 0) == command_id)]

    def ask(self, command: Command, **kwargs: Any) -> Result:
        """Send `command`, wait, and return its `Result` message (its value and the state after it)."""
        self.request(command, **kwargs)
        return next(m for m in reversed(self.messages("result", command.id)))

    @property
    def results(self) -> dict[str, Any]:
        """The session's results as the states so far built them (results.json's data)."""
        return dict(self.__dict__.get("results_data", {}))

    @property
    def state(self) -> State:
        """The state the last answer carried."""
        return self.__dict__.get("last_state") or State()


def spawn(tmp_path: Path, **kwargs: Any) -> RecordingClient:
    """A real `planner engine` process with its log in tmp_path/engine.log; its deaths are kept in `deaths`."""
    deaths: list[EngineDiedError] = []
    client = RecordingClient.spawn(log_path=tmp_path / "engine.log", on_death=deaths.append, **kwargs)
    assert isinstance(client, RecordingClient)
    client.deaths = deaths
    client.__dict__.setdefault("heard", [])
    return client


class Background:
    """One command sent from a thread, so the test can act (cancel, kill) while it runs."""

    def __init__(self, client: RecordingClient, command: Command) -> None:
        self.events: list[Event] = []
        self.reply: Result | None = None
        self.error: BaseException | None = None
        self._heard = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(client, command), daemon=True)
        self._thread.start()

    def _run(self, client: RecordingClient, command: Command) -> None:
        try:
            self.reply = client.ask(command, on_event=self._on_event)
        except BaseException as exc:  # noqa: BLE001 - the test asserts on it
            self.error = exc
        with self._heard:
            self._heard.notify_all()

    def _on_event(self, event: Event) -> None:
        with self._heard:
            self.events.append(event)
            self._heard.notify_all()

    def wait_for(self, wanted: Callable[[Event], bool], timeout_s: float = WAIT_S) -> Event:
        """The first event that `wanted` accepts; fails the test if the command ends or time runs out first."""
        deadline = time.monotonic() + timeout_s
        with self._heard:
            while True:
                found = next((e for e in self.events if wanted(e)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                assert self._thread.is_alive() and left > 0, (
                    f"no such event; the command ended with {self.reply or self.error!r}; heard "
                    f"{[(e.kind, e.message) for e in self.events]}")
                self._heard.wait(min(left, 0.5))

    def join(self, timeout_s: float = WAIT_S) -> None:
        """Wait for the command's answer; fails the test if none comes within `timeout_s`."""
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), f"no answer within {timeout_s} s; heard {[e.message for e in self.events]}"


def heard_bye(client: EngineClient, timeout_s: float = 10.0) -> Bye | None:
    """The engine's goodbye, once its reading thread has heard it (None if none comes within `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while client.bye is None and client.death is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.bye


def descendants(pid: int) -> list[psutil.Process]:
    """The processes `pid` started (its measuring workers), to end any a killed engine leaves behind."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def end_processes(processes: list[psutil.Process]) -> None:
    """End these processes if they still run (psutil checks each is the same process, not a reused pid)."""
    for process in processes:
        try:
            if process.is_running():
                process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=10)
