"""The client side of the engine protocol: start `planner engine`, say hello, send commands, hear events.

`EngineClient` owns the connection: the engine process (when it started one), a thread that reads the
engine's lines, and the commands waiting for their answer. It imports nothing that measures, so the
TUI that uses it starts in a fraction of a second and outlives any crash of the engine: an engine
that dies (a segfault, the OOM killer, SIGKILL) fails the waiting command with `EngineDiedError`, which
names the exit signal.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

from planner import __version__
from planner.engine.protocol import (
    PROTOCOL_VERSION,
    Answer,
    Bye,
    Cancel,
    Command,
    EngineMessage,
    Error,
    EventMessage,
    Hello,
    Message,
    ProtocolError,
    Result,
    Shutdown,
    State,
    decode_message,
    encode,
    event_of,
)
from planner.errors import PlannerError
from planner.events import Event, EventSink

ENGINE_COMMAND_ENV = "PLANNER_ENGINE_COMMAND"
"""Set it to a command line to start another engine than this Python's `planner engine` (a fake one in tests)."""

HELLO_TIMEOUT_S = 60.0
"""How long a starting engine may take to say hello (a cold disk cache can take seconds)."""

WATCH_INTERVAL_S = 0.25
WATCH_GRACE_S = 1.0
"""How often the engine process is checked for an exit its stream does not show, and how long its last words
may take to arrive after it."""

SIGNAL_WORDS = {"SIGKILL": " (a kill -9, or the system's out-of-memory killer)",
                "SIGSEGV": " (a crash in native code: a segmentation fault)",
                "SIGABRT": " (a native library aborted)", "SIGBUS": " (a crash in native code: a bus error)"}
"""What a signal that ends an engine usually means, in words."""

STOP_WAIT_S = 3.0
"""How long a stopping engine gets after `shutdown` before SIGTERM, and again before SIGKILL."""

REINSTALL = "reinstall the planner in this environment (`make install`, or `pip install -e .` in the project)"


class EngineError(PlannerError):
    """The engine could not be started or spoke another protocol."""


class EngineDiedError(PlannerError):
    """The engine process ended while a command waited (or between commands); `signal_name` says how."""

    def __init__(self, problem: str, fix: str = "", *, signal_name: str | None = None,
                 returncode: int | None = None) -> None:
        super().__init__(problem, fix)
        self.signal_name = signal_name
        self.returncode = returncode


MAX_UNCLAIMED = 100_000
"""At most this many of an earlier client's messages are kept for `follow` (a run sends a few thousand)."""


class _Pending:
    """A command waiting for its `result` or `error`."""

    def __init__(self, on_event: EventSink | None) -> None:
        self.on_event = on_event
        self.done = threading.Event()
        self.reply: Answer | None = None


def engine_command() -> list[str]:
    """The command that starts the engine: `$PLANNER_ENGINE_COMMAND`, else this Python's `planner engine`."""
    override = os.environ.get(ENGINE_COMMAND_ENV)
    if override:
        return shlex.split(override)
    return [sys.executable, "-m", "planner.cli", "engine"]


class EngineClient:
    """One connection to an engine: `request` sends a command and waits for its answer."""

    def __init__(self, reader: IO[str], writer: IO[str], *, process: subprocess.Popen | None = None,
                 on_death: Callable[[EngineDiedError], None] | None = None,
                 exit_problem: Callable[[str], EngineDiedError] | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.process = process
        self.on_death = on_death
        self.exit_problem = exit_problem  # how the stream's end is told when no local process explains it (SSH)
        self._follow: _Pending | None = None  # `follow`: every command's messages, for a client that re-attached
        # An earlier client's messages heard before `follow` began (a re-attached client's replay starts at once,
        # and its reading thread can route the whole replay, the plan's result included, before `follow` is
        # called): kept for `follow`, which hears them first, so none is lost.
        self._unclaimed: list[EngineMessage] = []
        self._asked = False  # it sent a command of its own: then a message nobody waits for is an abandoned one's
        self.hello = Hello(protocol=0)
        self.bye: Bye | None = None
        self.on_state: Callable[[State], None] | None = None  # each answer's state, applied in the order heard
        self.death: EngineDiedError | None = None
        self.running = ""  # the name of the command in progress, for what a death report says was running
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._reader_thread: threading.Thread | None = None
        self._over = threading.Event()  # set once the connection has ended (goodbye, death or close)
        self.stray: list[str] = []  # lines that were not messages (kept for the log; never fatal)
        self.received = 0  # messages heard, the hello included: where a re-attached replay of a detached run resumes

    # -- starting ------------------------------------------------------------------------------
    @classmethod
    def spawn(cls, *, log_path: Path | None = None, command: list[str] | None = None,
              on_death: Callable[[EngineDiedError], None] | None = None) -> EngineClient:
        """Start an engine process and shake hands; EngineError (with how to reinstall) when it cannot start."""
        client = cls.start(log_path=log_path, command=command, on_death=on_death)
        client.connect(log_path=log_path)
        return client

    @classmethod
    def start(cls, *, log_path: Path | None = None, command: list[str] | None = None,
              on_death: Callable[[EngineDiedError], None] | None = None) -> EngineClient:
        """Start an engine process without waiting for its hello (`connect` reads it): the TUI starts its engine
        before importing Textual, so the two start-ups overlap."""
        argv = command or engine_command()
        log = open(log_path, "ab") if log_path is not None else subprocess.DEVNULL  # noqa: SIM115 - the child keeps it
        try:
            # Its own session (and process group): when it dies, whatever it started (measuring processes, compile
            # workers) can be ended with it, and a terminal's signals reach the client, which speaks for it.
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                       text=True, encoding="utf-8", bufsize=1, start_new_session=True)
        except OSError as exc:
            raise EngineError(f"the planner engine could not start ({shlex.join(argv)}): {exc}", REINSTALL) from exc
        finally:
            if log is not subprocess.DEVNULL:
                log.close()  # type: ignore[union-attr]
        assert process.stdout is not None and process.stdin is not None
        return cls(process.stdout, process.stdin, process=process, on_death=on_death)

    def connect(self, *, log_path: Path | None = None) -> Hello:
        """Read the engine's hello and check its protocol version; then start hearing its messages."""
        line = _readline(self.reader, HELLO_TIMEOUT_S)
        where = f"; what it printed is in {log_path}" if log_path else ""
        if line is None:  # still running, but silent: end it rather than leave it behind
            self.close(wait=False)
            raise EngineError(f"the planner engine did not say hello within {HELLO_TIMEOUT_S:g} s{where}", REINSTALL)
        if not line:
            died = self._exit_problem("before it said hello")
            raise EngineError(died.problem + where, REINSTALL)
        try:
            hello = _hello_of(line)
        except ProtocolError as exc:
            self.close(wait=False)
            raise EngineError(f"the planner engine did not start the protocol: {exc}", REINSTALL) from exc
        if hello.protocol != PROTOCOL_VERSION:
            self.close(wait=False)
            raise EngineError(
                f"the planner engine speaks protocol version {hello.protocol} (planner {hello.planner or '?'}); this "
                f"client speaks version {PROTOCOL_VERSION} (planner {__version__})",
                "install the same planner version on both sides")
        self.hello = hello
        self.received = 1
        self._reader_thread = threading.Thread(target=self._read, name="engine-reader", daemon=True)
        self._reader_thread.start()
        if self.process is not None:
            threading.Thread(target=self._watch, name="engine-watch", daemon=True).start()
        return hello

    def _watch(self) -> None:
        """Notice the engine process ending even while its stream stays open: a process it forked (a measuring
        worker, a compiler's worker pool) inherits the stream's descriptor and keeps it open after the engine died."""
        assert self.process is not None
        while not self._over.is_set():
            if self.process.poll() is not None:
                self._over.wait(WATCH_GRACE_S)  # a goodbye or the end of the stream may still be on its way
                self._ended()
                return
            self._over.wait(WATCH_INTERVAL_S)

    # -- commands ------------------------------------------------------------------------------
    def send(self, message: Message) -> None:
        """Send a message that expects no answer (`cancel`, `shutdown`); a dead engine is no error here."""
        with self._write_lock:
            try:
                self.writer.write(encode(message) + "\n")
                self.writer.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def request(self, command: Command, *, on_event: EventSink | None = None) -> Any:
        """Send a command (numbered here) and wait for its `Result`; returns the result's value. Its `Error` raises
        PlannerError, a dead engine EngineDiedError."""
        if self.death is not None:
            raise self.death
        command.id = next(self._ids)
        pending = _Pending(on_event)
        with self._lock:
            self._pending[command.id] = pending
            self._asked = True
        self.running = command.name
        try:
            self.send(command)
            pending.done.wait()
        finally:
            with self._lock:
                self._pending.pop(command.id, None)
        reply = pending.reply
        if reply is None:
            raise self.death or EngineDiedError("the planner engine stopped", "restart it")
        if isinstance(reply, Error):
            raise PlannerError(reply.problem or "the engine failed", reply.fix)
        return reply.value

    def follow(self, *, on_event: EventSink | None = None) -> Answer | None:
        """For a client that re-attached to a detached engine: hear the replayed and live messages of the commands
        an earlier client sent, until the first `result` or `error`; returns it, or None when the engine's stream
        ends first (`death` then says why)."""
        pending = _Pending(on_event)
        with self._lock:
            self._follow = pending
            early, self._unclaimed = self._unclaimed, []
        for message in early:
            self._deliver(pending, message)
            if pending.done.is_set():
                break
        try:
            while not pending.done.wait(0.2):
                if self._over.is_set():
                    break
        finally:
            with self._lock:
                self._follow = None
        return pending.reply

    # -- hearing -------------------------------------------------------------------------------
    def _read(self) -> None:
        """The reading thread: route each line to its command until the engine's stdout closes."""
        while True:
            try:
                line = self.reader.readline()
            except (OSError, ValueError):
                line = ""
            if not line:
                break
            try:
                message = decode_message(line)
            except ProtocolError:
                self.stray.append(line.rstrip("\n"))
                continue
            self.received += 1
            self._route(message)
        self._ended()

    def _route(self, message: EngineMessage) -> None:
        if isinstance(message, Bye):
            self.bye = message
            return
        if isinstance(message, Hello):
            return  # a replay's hello (the handshake was read before this thread started)
        if not isinstance(message, EventMessage) and message.state is not None and self.on_state is not None:
            self.on_state(message.state)  # here, in the order heard: each state builds on the one before
        with self._lock:
            pending = self._pending.get(message.id)
            if pending is None and message.id:
                pending = self._follow  # an earlier client's command, replayed to one that re-attached
                if pending is None and not self._asked and len(self._unclaimed) < MAX_UNCLAIMED:
                    self._unclaimed.append(message)  # heard before `follow` began: it hears it first
                    return
        if pending is None:
            return  # an answer nobody waits for (a command abandoned at quit) or an id-less error
        self._deliver(pending, message)

    @staticmethod
    def _deliver(pending: _Pending, message: EngineMessage) -> None:  # after _route: an event or an answer
        """An event to its command's sink; a result or an error as its answer."""
        if isinstance(message, EventMessage):
            if pending.on_event is not None:
                try:
                    pending.on_event(event_of(message))
                except Exception:  # noqa: BLE001, S110 - a display failure must not stop hearing the engine
                    pass
        elif isinstance(message, (Result, Error)):
            pending.reply = message
            pending.done.set()

    def _ended(self) -> None:
        """The engine's stream closed or its process ended: a goodbye, or a death to report to every waiting
        command (once, whichever thread notices first)."""
        with self._lock:
            if self._over.is_set():
                return
            self._over.set()
        if self.bye is None:
            self.death = self._exit_problem(f"while it ran the {self.running} step" if self.running else "while idle")
            self._end_group()
        with self._lock:
            waiting = list(self._pending.values())
        for pending in waiting:
            pending.done.set()
        if self.death is not None and self.on_death is not None:
            self.on_death(self.death)

    def _exit_problem(self, when: str) -> EngineDiedError:
        """How the engine process ended, in words, with its signal or exit status."""
        if self.exit_problem is not None:
            return self.exit_problem(when)
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        if code is not None and code < 0:
            name = _signal_name(-code)
            why = SIGNAL_WORDS.get(name, "")
            return EngineDiedError(f"the planner engine was killed by {name}{why} {when}", "restart the engine",
                                   signal_name=name, returncode=code)
        status = f"exited with status {code}" if code is not None else "closed its connection"
        return EngineDiedError(f"the planner engine {status} {when}", "restart the engine", returncode=code)

    def _end_group(self) -> None:
        """End whatever the dead engine left running (its measuring processes share its process group)."""
        from planner.supervise import end_group

        if self.process is not None:
            end_group(self.process.pid)

    # -- stopping ------------------------------------------------------------------------------
    def cancel(self, *, now: bool = False) -> None:
        """Ask the engine to stop the running command (at its next safe point, or `now`)."""
        self.send(Cancel(now=now))

    def end_if_busy_after(self, seconds: float) -> None:
        """If a command still waits `seconds` from now, the engine is stuck: end it (and what it started), which
        fails the command with EngineDiedError as any death does."""
        if self.process is None:
            return
        with self._lock:
            waiting = set(self._pending)

        def check() -> None:
            with self._lock:
                stuck = bool(waiting & set(self._pending))
            if stuck and self.alive:
                self._end_group()

        timer = threading.Timer(seconds, check)
        timer.daemon = True
        timer.start()

    def close(self, *, wait: bool = True) -> None:
        """Shut the engine down: `shutdown`, then SIGTERM and SIGKILL if it does not go within a few seconds."""
        self.send(Shutdown())
        process = self.process
        if process is None:
            return
        for stop in ((lambda: None) if wait else process.terminate, process.terminate, process.kill):
            stop()
            try:
                process.wait(timeout=STOP_WAIT_S if wait else 0.5)
                break
            except subprocess.TimeoutExpired:
                continue
        self._over.set()
        self._end_group()  # a measuring process the engine could not stop in time
        for stream in (self.writer, self.reader):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    @property
    def alive(self) -> bool:
        """Whether the engine still answers (its stream is open and it has not said goodbye)."""
        return self.death is None and self.bye is None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _hello_of(line: str) -> Hello:
    """The engine's first line as its hello; ProtocolError when it is not one. An engine of another protocol
    version may shape its other messages differently, but its hello always has a `protocol`."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON ({exc}): {line[:80]!r}") from exc
    if not isinstance(data, dict) or data.get("type") != "hello":
        kind = data.get("type") if isinstance(data, dict) else None
        raise ProtocolError(f"its first message was {kind!r}, not its hello")
    if data.get("protocol") != PROTOCOL_VERSION:
        version = data.get("protocol")
        return Hello(protocol=version if isinstance(version, int) else -1, planner=str(data.get("planner", "")))
    message = decode_message(line)
    assert isinstance(message, Hello)
    return message


def _readline(reader: IO[str], timeout_s: float) -> str | None:
    """One line from `reader`: "" when the stream ends, None when none comes within `timeout_s` (a hung engine)."""
    box: list[str] = []
    thread = threading.Thread(target=lambda: box.append(reader.readline()), daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    thread.join(max(0.0, deadline - time.monotonic()))
    return box[0] if box else None


__all__ = ["EngineClient", "EngineDiedError", "EngineError", "Event", "engine_command"]
