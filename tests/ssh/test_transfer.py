"""Ship a model into a host's cache and fetch a run's folder back, over real SFTP; hostile and full hosts included.

The ordinary host is helper A's (tests/ssh/conftest.py: an asyncssh server in its own process, and a real
OpenSSH sshd where one is installed). The hostile and full-disk hosts are asyncssh servers started inside the
test, whose SFTP server lies about names or fails writes the way a full disk does.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest

from planner.ssh.transfer import (
    MAX_DEPTH,
    RemoteDiskFullError,
    TransferError,
    UnsafeRemotePathError,
    fetch,
    fetch_tree,
    ship,
    ship_model,
)

MODEL_BYTES = 5 * (1 << 20) + 123  # more than one chunk, not a whole number of them


def _model(tmp_path: Path) -> Path:
    path = tmp_path / "local" / "model.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(MODEL_BYTES))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _connect(host) -> contextlib.AbstractAsyncContextManager[asyncssh.SSHClientConnection]:
    """A connection to one of helper A's test hosts, as its ssh_config alias names it."""
    options = host.ssh_options
    return asyncssh.connect(host.alias, config=[str(p) for p in options.config_paths],
                            known_hosts=str(options.known_hosts), agent_path=None, connect_timeout=20)


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def _write_run(root: Path) -> dict[str, bytes]:
    """A run's folder as the engine leaves it: results, report, figures, a deploy package."""
    files = {"results.json": b'{"status": "complete"}', "report.md": b"# Plan\n",
             "figures/latency.png": os.urandom(70_000), "deploy/cpu-int8/run.py": b"print('run')\n",
             "deploy/cpu-int8/model.onnx": os.urandom(300_000)}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


# Against the ordinary test host


def test_a_model_is_sent_once_and_arrives_intact(ssh_host, tmp_path) -> None:
    model = _model(tmp_path)
    cache = str(ssh_host.remote_home / ".cache" / "planner")

    async def go():
        async with _connect(ssh_host) as conn:
            return await ship(conn, model, cache), await ship(conn, model, cache), await ship_model(conn, model, cache)

    first, second, path = _run(go())
    assert first.sent and not second.sent  # the second ship sent nothing: the host had it
    assert first.remote_path == second.remote_path == path == f"{cache}/models/{_sha(model)}/model.onnx"
    assert _sha(Path(path)) == _sha(model)
    assert os.listdir(Path(path).parent) == ["model.onnx"]  # no temporary file left beside it


def test_a_partial_copy_under_the_name_is_replaced(ssh_host, tmp_path) -> None:
    """A same-named file of another size (not a finished upload) is sent over, not trusted."""
    model = _model(tmp_path)
    cache = ssh_host.remote_home / ".cache" / "planner"
    stale = cache / "models" / _sha(model) / "model.onnx"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half")

    async def go():
        async with _connect(ssh_host) as conn:
            return await ship(conn, model, str(cache))

    assert _run(go()).sent and _sha(stale) == _sha(model)


def test_a_run_folder_comes_back_whole_and_replaces_an_older_fetch(ssh_host, tmp_path) -> None:
    run = ssh_host.remote_home / ".cache" / "planner" / "runs" / "r1"
    files = _write_run(run)
    local = tmp_path / "out" / "host1"
    (local / "old").mkdir(parents=True)
    (local / "old" / "stale.txt").write_text("from an earlier fetch")

    async def go():
        async with _connect(ssh_host) as conn:
            return await fetch_tree(conn, str(run), local)

    written = _run(go())
    assert sorted(str(p.relative_to(local)) for p in written) == sorted(files)
    for rel, data in files.items():
        assert (local / rel).read_bytes() == data
    assert not (local / "old").exists()  # the older fetch was replaced, not merged
    assert os.listdir(tmp_path / "out") == ["host1"]  # no temporary or old folder left beside it


def test_links_are_skipped_and_never_followed(ssh_host, tmp_path) -> None:
    run = ssh_host.remote_home / "run"
    _write_run(run)
    (run / "passwd").symlink_to("/etc/passwd")
    (run / "etc").symlink_to("/etc", target_is_directory=True)
    local = tmp_path / "out" / "host1"

    async def go():
        async with _connect(ssh_host) as conn:
            return await fetch(conn, str(run), local)

    fetched = _run(go())
    assert fetched.skipped == {"passwd": "a link (links are never followed)",
                               "etc": "a link (links are never followed)"}
    assert not (local / "passwd").exists() and not (local / "etc").exists()
    assert (local / "results.json").is_file()


def test_real_openssh_ship_and_fetch(sshd_host, tmp_path) -> None:
    """OpenSSH's own SFTP server: its POSIX rename, its stat, its listings."""
    model = _model(tmp_path)
    cache = str(sshd_host.remote_home / ".cache" / "planner")
    run = sshd_host.remote_home / "run"
    files = _write_run(run)

    async def go():
        async with _connect(sshd_host) as conn:
            shipped = [await ship(conn, model, cache), await ship(conn, model, cache)]
            return shipped, await fetch_tree(conn, str(run), tmp_path / "out")

    (first, second), written = _run(go())
    assert first.sent and not second.sent and _sha(Path(first.remote_path)) == _sha(model)
    assert len(written) == len(files)
    assert (tmp_path / "out" / "deploy/cpu-int8/run.py").read_bytes() == b"print('run')\n"


# Hosts started inside the test, whose SFTP server misbehaves


class _OpenDoor(asyncssh.SSHServer):
    """Lets any client in: these servers listen on 127.0.0.1 for one test only."""

    def begin_auth(self, username: str) -> bool:
        return False


@contextlib.asynccontextmanager
async def _server(sftp_factory=None, **listen) -> AsyncIterator[asyncssh.SSHClientConnection]:
    """An SSH server on a free 127.0.0.1 port with `sftp_factory` (and any other `asyncssh.listen` options), and a
    client connection to it."""
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen("127.0.0.1", 0, server_host_keys=[host_key], server_factory=_OpenDoor,
                                   sftp_factory=sftp_factory, **listen)
    port = server.sockets[0].getsockname()[1]
    try:
        trusted = ([host_key.convert_to_public()], [], [])
        async with asyncssh.connect("127.0.0.1", port, username="test", known_hosts=trusted, client_keys=None,
                                    agent_path=None, config=None, connect_timeout=10) as conn:
            yield conn
    finally:
        server.close()
        await server.wait_closed()


def _rooted(root: Path, base: type[asyncssh.SFTPServer] = asyncssh.SFTPServer):
    """An SFTP server class of `base` whose root is `root` (paths the client sends are under it)."""
    def factory(chan):
        return base(chan, chroot=str(root).encode())
    return factory


def _everything_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


@pytest.mark.parametrize("name", ["../../escape", "/etc/x", "a/../../b", "", "sub\\..\\..\\x", "bell\x07",
                                  b"\xff\xfename"])
def test_a_hostile_name_writes_nothing_anywhere(tmp_path, name) -> None:
    remote = tmp_path / "remote"
    _write_run(remote / "run")
    raw = name if isinstance(name, bytes) else name.encode()

    class Hostile(asyncssh.SFTPServer):
        """Lists an extra name in the run folder that tries to climb out of wherever it is written."""

        async def scandir(self, path: bytes):
            async for entry in super().scandir(path):
                yield entry
            if path.rstrip(b"/").endswith(b"/run"):
                yield asyncssh.SFTPName(raw, attrs=asyncssh.SFTPAttrs(type=asyncssh.FILEXFER_TYPE_REGULAR, size=4,
                                                                      permissions=0o100644))

    local = tmp_path / "work" / "out" / "host1"
    before = _everything_under(tmp_path)

    async def go():
        async with _server(_rooted(remote, Hostile)) as conn:
            return await fetch_tree(conn, "/run", local, host="evil")

    with pytest.raises(UnsafeRemotePathError) as caught:
        _run(go())
    assert "evil listed a name in /run that could write outside the local folder" in caught.value.problem
    assert "refused" in caught.value.problem or "not UTF-8" in caught.value.problem
    after = _everything_under(tmp_path)
    assert after - before == {"work", "work/out"}  # only the (empty) parent of the out folder was made


def test_too_deep_a_tree_is_refused(tmp_path) -> None:
    remote = tmp_path / "remote"
    deep = remote / "run" / Path(*["d"] * (MAX_DEPTH + 1))
    deep.mkdir(parents=True)
    local = tmp_path / "out"

    async def go():
        async with _server(_rooted(remote)) as conn:
            return await fetch_tree(conn, "/run", local, host="deep")

    with pytest.raises(UnsafeRemotePathError, match="holds folders more than 32 deep"):
        _run(go())
    assert not local.exists() and os.listdir(tmp_path) == ["remote"]


class _FullDisk(asyncssh.SFTPServer):
    """A disk that fills up after the first megabyte written: the write fails with ENOSPC."""

    room = 1 << 20

    def write(self, file_obj, offset: int, data: bytes) -> int:
        if offset + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(file_obj, offset, data)


class _OpenSshFullDisk(asyncssh.SFTPServer):
    """A full disk as OpenSSH's server reports it: a bare "Failure", and statvfs showing no room."""

    def write(self, file_obj, offset: int, data: bytes) -> int:
        if offset > 0:
            raise asyncssh.SFTPFailure("Failure")
        return super().write(file_obj, offset, data)

    def statvfs(self, path: bytes):
        # The first check (before sending) sees room; the one after the failure sees none.
        self.calls = getattr(self, "calls", 0) + 1
        free = 1 << 30 if self.calls == 1 else 4096
        return asyncssh.SFTPVFSAttrs(bsize=4096, frsize=4096, blocks=1 << 20, bfree=free // 4096,
                                     bavail=free // 4096, files=1000, ffree=900, favail=900, namemax=255)


class _NoRoom(asyncssh.SFTPServer):
    """A disk with 1 MB free: the ship knows before sending a byte."""

    writes = 0

    def write(self, file_obj, offset: int, data: bytes) -> int:
        type(self).writes += 1
        return super().write(file_obj, offset, data)

    def statvfs(self, path: bytes):
        return asyncssh.SFTPVFSAttrs(bsize=4096, frsize=4096, blocks=1 << 20, bfree=256, bavail=256,
                                     files=1000, ffree=900, favail=900, namemax=255)


@pytest.mark.parametrize("server", [_FullDisk, _OpenSshFullDisk, _NoRoom])
def test_a_full_disk_is_said_and_leaves_nothing_half_written(tmp_path, server) -> None:
    model = _model(tmp_path)
    remote = tmp_path / "remote"
    remote.mkdir()

    async def go():
        async with _server(_rooted(remote, server)) as conn:
            return await ship(conn, model, "/cache", host="board")

    with pytest.raises(RemoteDiskFullError) as caught:
        _run(go())
    assert caught.value.problem.startswith("board's disk is full: model.onnx could not be stored there")
    assert "nothing half-written was left" in caught.value.problem and "free some space on board" in caught.value.fix
    folder = remote / "cache" / "models" / _sha(model)
    assert os.listdir(folder) == []  # the temporary file was removed, and nothing has the cached name
    if server is _NoRoom:
        assert server.writes == 0 and "(1.0 MB free, 5.2 MB needed)" in caught.value.problem


def test_a_file_the_host_will_not_give_fails_the_fetch_and_writes_nothing(tmp_path) -> None:
    remote = tmp_path / "remote"
    _write_run(remote / "run")

    class Guarded(asyncssh.SFTPServer):
        """Lists every file but refuses to open the report."""

        def open(self, path: bytes, pflags: int, attrs):
            if path.endswith(b"report.md"):
                raise PermissionError(errno.EACCES, "Permission denied")
            return super().open(path, pflags, attrs)

    local = tmp_path / "out" / "host1"

    async def go():
        async with _server(_rooted(remote, Guarded)) as conn:
            return await fetch_tree(conn, "/run", local, host="guarded")

    with pytest.raises(TransferError, match="Fetching /run from guarded failed: Permission denied; nothing was"):
        _run(go())
    assert os.listdir(tmp_path / "out") == []  # not even a part of the run, nor the temporary folder


def test_a_cancelled_ship_leaves_no_temporary_file(tmp_path) -> None:
    """Ctrl-C mid-upload: the partial file is removed, and nothing carries the cached name."""
    model = _model(tmp_path)
    remote = tmp_path / "remote"
    remote.mkdir()
    writing = asyncio.Event()

    class Slow(asyncssh.SFTPServer):
        """A slow link: each write takes a while."""

        async def write(self, file_obj, offset: int, data: bytes) -> int:
            writing.set()
            await asyncio.sleep(0.2)
            return super().write(file_obj, offset, data)

    async def go():
        async with _server(_rooted(remote, Slow)) as conn:
            task = asyncio.create_task(ship(conn, model, "/cache", host="slow"))
            await asyncio.wait_for(writing.wait(), 20)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    _run(go())
    assert os.listdir(remote / "cache" / "models" / _sha(model)) == []
