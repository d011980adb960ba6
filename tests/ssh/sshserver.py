"""A test SSH host: a real asyncssh server in its own process, on 127.0.0.1, that runs real commands.

    python tests/ssh/sshserver.py CONFIG.json

CONFIG holds:
    port             0 for a free one (restarting on the same port: the port it had)
    port_file        written (atomically) with the port once the server listens
    host_key         the server's private host key file (kept across restarts, so the key stays the same)
    user             the one user name that may log in
    auth             "key" (authorized_keys only) or "password" (a password only: what batch mode refuses)
    authorized_keys  for "key": the client public keys allowed in
    password         for "password": the password
    home             the remote home: every command runs there, and relative SFTP paths resolve against it
    env              the whole environment of each command (HOME, PATH, extra variables such as PLANNER_CPUS)
    sftp             optional, default true; false: no SFTP subsystem (a request for it is refused, as a minimal
                     sshd or a Dropbear without sftp-server refuses it): files must go over the command channel

Each command runs as `/bin/sh -c COMMAND` in its own session, as sshd runs it, with stdin, stdout and
stderr streamed both ways and the exit status (or the signal that ended it) sent back. When the channel
closes the command's stdin is closed, so it reads EOF, and its output pipes are closed, so a write fails:
the command itself is never killed, and one that detached from its pipes outlives the channel (as an
engine started with --detach must). Signals the client sends on the channel go to the command.
The SFTP subsystem is asyncssh's own SFTPServer over the real file system (unless the config says "sftp": false).

Killing this process (SIGKILL) drops every connection at once, as a cut network does; SIGSTOP makes the
host stop answering without closing anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import asyncssh

_CHUNK = 65536


class _Host(asyncssh.SSHServer):
    """Lets in the one configured user, by key or by password as the host's config says."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn

    def begin_auth(self, username: str) -> bool:
        if self._config["auth"] == "key" and username == self._config["user"] and self._conn is not None:
            self._conn.set_authorized_keys(self._config["authorized_keys"])
        return True

    def password_auth_supported(self) -> bool:
        return bool(self._config["auth"] == "password")

    def validate_password(self, username: str, password: str) -> bool:
        return bool(username == self._config["user"] and password == self._config["password"])


async def _feed_stdin(process: asyncssh.SSHServerProcess, child: asyncio.subprocess.Process) -> None:
    """Channel -> command's stdin; signals from the channel go to the command; EOF or a closed channel closes stdin."""
    assert child.stdin is not None
    try:
        while True:
            try:
                data = await process.stdin.read(_CHUNK)
            except asyncssh.SignalReceived as sig:
                with contextlib.suppress(AttributeError, ProcessLookupError):
                    os.kill(child.pid, getattr(signal, f"SIG{sig.signal}"))
                continue
            except asyncssh.BreakReceived:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGINT)
                continue
            except asyncssh.TerminalSizeChanged:
                continue
            if not data:
                break
            child.stdin.write(data)
            await child.stdin.drain()
    except (OSError, asyncssh.Error):
        pass  # the channel or the command's stdin went away: either way the command's input has ended
    finally:
        child.stdin.close()


async def _pump_output(
    source: asyncio.StreamReader, sink: asyncssh.SSHWriter, child: asyncio.subprocess.Process, fd: int
) -> None:
    """Command's stdout or stderr -> channel, until EOF; if the channel is gone, close the pipe as sshd would."""
    try:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
    except (OSError, asyncssh.Error):
        # The command's next write gets EPIPE, not a pipe that fills up and blocks it forever.
        transport = child._transport  # type: ignore[attr-defined]  # asyncio keeps the pipes only here
        pipe = transport.get_pipe_transport(fd) if transport is not None else None
        if pipe is not None:
            pipe.close()


def _make_process_handler(config: dict[str, Any]):
    async def run(process: asyncssh.SSHServerProcess) -> None:
        argv = ["/bin/sh", "-c", process.command] if process.command is not None else ["/bin/sh"]
        child = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=config["home"],
            env=config["env"],
            start_new_session=True,
        )
        assert child.stdout is not None and child.stderr is not None
        feeding = asyncio.create_task(_feed_stdin(process, child))
        # Output ends when the command and everything that kept its pipes have closed them, as with sshd.
        await asyncio.gather(
            _pump_output(child.stdout, process.stdout, child, 1),
            _pump_output(child.stderr, process.stderr, child, 2),
        )
        code = await child.wait()
        feeding.cancel()
        with contextlib.suppress(OSError, asyncssh.Error):
            if code < 0:
                process.exit_with_signal(signal.Signals(-code).name.removeprefix("SIG"))
            else:
                process.exit(code)

    return run


async def _serve(config: dict[str, Any]) -> None:
    server = await asyncssh.create_server(
        lambda: _Host(config),
        "127.0.0.1",
        int(config["port"]),
        server_host_keys=[config["host_key"]],
        process_factory=_make_process_handler(config),
        encoding=None,
        sftp_factory=True if config.get("sftp", True) else None,
        allow_scp=True,
        password_auth=config["auth"] == "password",
        kbdint_auth=False,
        reuse_address=True,
    )
    port = server.sockets[0].getsockname()[1]
    port_file = Path(config["port_file"])
    partial = port_file.with_suffix(".partial")
    partial.write_text(str(port))
    partial.replace(port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    """Serve the host described by the config file named on the command line until SIGTERM."""
    config = json.loads(Path(sys.argv[1]).read_text())
    # Relative SFTP paths resolve against the process's working folder: make that the remote home.
    os.chdir(config["home"])
    asyncio.run(_serve(config))


if __name__ == "__main__":
    main()
