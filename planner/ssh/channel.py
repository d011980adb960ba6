"""A remote command as the text streams `EngineClient` reads and writes, over asyncssh.

asyncssh is asyncio; the engine client (and the TUI's workers that use it) are threads. One asyncio loop runs on
a daemon thread for every SSH connection of this process (`ssh_loop`); a thread hands it coroutines with `run`.
`RemoteProcess` starts a command on a connection and pumps its stdout into a pipe, so the client reads the
remote engine exactly as it reads a local one. When the stream ends, `problem` says why in words: the remote
command's exit status (a detached run's relay says the engine is gone, or the host rebooted), or the SSH
connection lost.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from concurrent.futures import Future
from typing import IO, Any, Coroutine, TypeVar

import asyncssh

from planner.engine.client import EngineDiedError

T = TypeVar("T")

CANCEL_CLEANUP_S = 5.0
"""How long a remote step cancelled by Ctrl-C may take to clean up (a half-sent file removed) before the
interrupt goes on."""

STDERR_LINES = 20
"""How many of the remote command's last stderr lines are kept, to quote when it fails."""


class SshLoop:
    """One asyncio event loop on a daemon thread, shared by every SSH connection of this process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ssh-loop", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule `coro` on the loop; its future can be waited on from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait for its result (its exception is raised here). Ctrl-C cancels it and
        gives it a moment to clean up (a half-sent file removed) before the interrupt goes on."""
        ended = threading.Event()

        async def tracked() -> T:
            try:
                return await coro
            finally:
                ended.set()

        future = self.submit(tracked())
        try:
            return future.result(timeout)
        except KeyboardInterrupt:
            future.cancel()  # cancels the task on the loop; its cleanup (finally blocks) runs there
            ended.wait(CANCEL_CLEANUP_S)
            raise


_LOOP: SshLoop | None = None
_LOOP_LOCK = threading.Lock()


def ssh_loop() -> SshLoop:
    """This process's SSH loop, started on first use."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = SshLoop()
        return _LOOP


class _ChannelWriter:
    """The remote command's stdin as a text stream: each write is handed to the loop (never blocks the caller)."""

    def __init__(self, owner: RemoteProcess) -> None:
        self.owner = owner
        self.closed = False

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("the channel to the remote engine is closed")
        self.owner.loop.loop.call_soon_threadsafe(self.owner.feed, text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        """Nothing to do: the loop sends each write as soon as it runs."""

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.owner.loop.loop.call_soon_threadsafe(self.owner.end_input)


class RemoteProcess:
    """A command running on the remote, its stdout readable as `reader` and its stdin writable as `writer`."""

    def __init__(self, conn: asyncssh.SSHClientConnection, command: str, *, host: str,
                 loop: SshLoop | None = None) -> None:
        self.conn = conn
        self.command = command
        self.host = host
        self.loop = loop or ssh_loop()
        read_fd, self._write_fd = os.pipe()
        self.reader: IO[str] = os.fdopen(read_fd, "r", encoding="utf-8")
        self.writer = _ChannelWriter(self)
        self.process: asyncssh.SSHClientProcess | None = None
        self.exit_status: int | None = None
        self.exit_signal: str | None = None
        self.lost: str = ""  # why the connection ended under the command, when it did
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.ended = threading.Event()
        self.loop.run(self._start())

    async def _start(self) -> None:
        self.process = await self.conn.create_process(self.command, encoding=None)
        asyncio.ensure_future(self._pump())
        asyncio.ensure_future(self._collect_stderr())

    async def _pump(self) -> None:
        """Copy the remote stdout into the pipe until it ends, then note how the command ended."""
        assert self.process is not None
        try:
            while True:
                chunk = await self.process.stdout.read(1 << 16)
                if not chunk:
                    break
                # Blocking writes go to a thread: a slow reader must not stall every other connection on the loop.
                await asyncio.to_thread(_write_all, self._write_fd, chunk)
            completed = await asyncio.wait_for(self.process.wait(), 10)
            self.exit_status = completed.exit_status
            self.exit_signal = completed.exit_signal[0] if completed.exit_signal else None
            if self.exit_status is None and self.exit_signal is None:
                self.lost = "the SSH connection closed"
        except (asyncssh.Error, OSError, asyncio.TimeoutError, BrokenPipeError) as exc:
            self.lost = _lost_words(exc)
        finally:
            try:
                os.close(self._write_fd)
            except OSError:
                pass
            self.ended.set()

    async def _collect_stderr(self) -> None:
        assert self.process is not None
        try:
            while True:
                line = await self.process.stderr.readline()
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip()
                if text:
                    self.stderr.append(text)
        except (asyncssh.Error, OSError):
            return

    def feed(self, data: bytes) -> None:
        """On the loop: send `data` to the remote command's stdin (dropped once the channel is gone)."""
        if self.process is None:
            return
        try:
            self.process.stdin.write(data)
        except (asyncssh.Error, OSError, BrokenPipeError, RuntimeError):
            pass

    def end_input(self) -> None:
        """On the loop: close the remote command's stdin (its relay then ends; a detached engine goes on)."""
        if self.process is None:
            return
        try:
            self.process.stdin.write_eof()
        except (asyncssh.Error, OSError, BrokenPipeError, RuntimeError):
            pass

    def problem(self, when: str) -> EngineDiedError:
        """Why the remote engine's stream ended, in words (for `EngineClient`'s death report)."""
        self.ended.wait(15)
        said = f" (it said: {self.stderr[-1]})" if self.stderr else ""
        if self.lost:
            return EngineDiedError(f"the connection to {self.host} was lost {when}: {self.lost}",
                                   "check the network and the host; a plan there goes on: `planner attach` fetches it")
        if self.exit_signal:
            return EngineDiedError(f"the planner on {self.host} was killed by SIG{self.exit_signal} {when}{said}",
                                   "see the engine's log in the run's folder on the host", signal_name=self.exit_signal)
        from planner.engine.detached import GONE, REBOOTED

        if self.exit_status == REBOOTED:
            return EngineDiedError(f"{self.host} rebooted {when}: its engine is gone", "plan again once it is up",
                                   returncode=self.exit_status)
        if self.exit_status == GONE:
            return EngineDiedError(f"the engine on {self.host} ended without a goodbye (killed or crashed) {when}",
                                   "see the engine's log in the run's folder on the host", returncode=self.exit_status)
        return EngineDiedError(f"the planner on {self.host} exited with status {self.exit_status} {when}{said}",
                               "run the same command on the host to see why", returncode=self.exit_status)

    def close(self) -> None:
        """Close our side of the channel (the remote engine, detached, is not ended by this)."""
        self.writer.close()

        async def closing() -> None:
            if self.process is not None:
                self.process.close()

        try:
            self.loop.run(closing(), timeout=5)
        except Exception:  # noqa: BLE001, S110 - a connection already gone has nothing left to close
            pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _lost_words(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "the host stopped answering"
    text = str(exc) or type(exc).__name__
    return text[0].lower() + text[1:] if text else type(exc).__name__
