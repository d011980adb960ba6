"""Ship and fetch through a host whose SSH server has no SFTP subsystem: a tar stream over the command channel.

The ordinary no-SFTP host is conftest.py's test host started with sftp=False (its SSH server refuses the
subsystem, as a minimal sshd or a Dropbear without sftp-server does); its commands run the real `tar`. The
hostile hosts are asyncssh servers started inside the test whose every command answers with a prepared tar
stream, as a compromised host's `tar -cf -` could.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest
from test_remote_plan import CLI, SCRIPTED
from test_transfer import _connect, _everything_under, _model, _run, _server, _sha, _write_run

from planner.ssh import transfer
from planner.ssh.transfer import (
    SFTP,
    TAR,
    RemoteDiskFullError,
    TransferError,
    UnsafeRemotePathError,
    fetch,
    known_way,
    ship,
    transfer_way,
)

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


# Through a test host without SFTP: the real tar on the other side


def test_a_model_goes_as_a_tar_stream_once_and_arrives_intact(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(sftp=False)
    model = _model(tmp_path)
    cache = str(host.remote_home / ".cache" / "planner")

    async def go():
        async with _connect(host) as conn:
            first = await ship(conn, model, cache)
            return first, await ship(conn, model, cache), known_way(conn)

    first, second, way = _run(go())
    assert way == TAR and first.way == TAR and second.way == TAR
    assert first.sent and not second.sent  # the second ship sent nothing: the host had it
    assert first.remote_path == f"{cache}/models/{_sha(model)}/model.onnx"
    assert _sha(Path(first.remote_path)) == _sha(model)
    assert os.listdir(Path(first.remote_path).parent) == ["model.onnx"]  # no temporary folder left beside it


def test_a_run_folder_comes_back_as_a_tar_stream_just_as_over_sftp(make_ssh_host, tmp_path) -> None:
    """The same run folder, links and all, fetched from a host with SFTP and from one without: the same files, the
    same skipped links, the way each came said."""
    with_sftp, without = make_ssh_host("with-sftp"), make_ssh_host("no-sftp", sftp=False)
    fetched = {}
    for host in (with_sftp, without):
        run = host.remote_home / ".cache" / "planner" / "runs" / "r1"
        files = _write_run(run)
        (run / "passwd").symlink_to("/etc/passwd")
        (run / "etc").symlink_to("/etc", target_is_directory=True)
        local = tmp_path / host.alias / "host"
        (local / "old").mkdir(parents=True)  # an earlier fetch, replaced (not merged)

        async def go(host=host, run=run, local=local):
            async with _connect(host) as conn:
                return await transfer_way(conn), await fetch(conn, str(run), local, host=host.alias)

        way, fetched[host.alias] = _run(go())
        assert way == fetched[host.alias].way
        for rel, data in files.items():
            assert (local / rel).read_bytes() == data
        assert not (local / "old").exists() and not (local / "passwd").exists() and not (local / "etc").exists()
        assert os.listdir(local.parent) == ["host"]  # no temporary or old folder left beside it
    sftp, tar = fetched["with-sftp"], fetched["no-sftp"]
    assert (sftp.way, tar.way) == (SFTP, TAR)
    assert [p.relative_to(tmp_path / "with-sftp") for p in sftp.files] == \
           [p.relative_to(tmp_path / "no-sftp") for p in tar.files]
    assert sftp.skipped == tar.skipped == {"passwd": "a link (links are never followed)",
                                           "etc": "a link (links are never followed)"}


def test_a_missing_folder_is_said(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(sftp=False)

    async def go():
        async with _connect(host) as conn:
            return await fetch(conn, str(host.remote_home / "no-such-run"), tmp_path / "out", host="board")

    with pytest.raises(TransferError, match="Cannot fetch .*no-such-run from board: it is not a folder"):
        _run(go())
    assert os.listdir(tmp_path) == []


def _fake_bin(tmp_path: Path, **scripts: str) -> str:
    """A folder of shell scripts standing in for commands on the host; returns a PATH that finds them first."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    for name, body in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return f"{folder}:{SYSTEM_PATH}"


def test_a_full_disk_is_said_and_leaves_nothing_half_written(make_ssh_host, tmp_path) -> None:
    """GNU tar's words for a disk that fills up while it extracts; the temporary folder goes, nothing has the name."""
    path = _fake_bin(tmp_path, tar="head -c 600000 >/dev/null\n"
                                   "echo 'tar: model.onnx: Cannot write: No space left on device' >&2\n"
                                   "echo 'tar: Exiting with failure status due to previous errors' >&2\nexit 2")
    host = make_ssh_host(sftp=False, env={"PATH": path})
    model = _model(tmp_path)
    cache = host.remote_home / "cache"

    async def go():
        async with _connect(host) as conn:
            return await ship(conn, model, str(cache), host="board")

    with pytest.raises(RemoteDiskFullError) as caught:
        _run(go())
    assert caught.value.problem.startswith("board's disk is full: model.onnx could not be stored there")
    assert os.listdir(cache / "models" / _sha(model)) == []


def test_a_cancelled_ship_leaves_no_temporary_folder(make_ssh_host, tmp_path) -> None:
    """Ctrl-C while the host's tar is still taking the stream: its temporary folder is removed, nothing has the name."""
    host = make_ssh_host(sftp=False, env={"PATH": _fake_bin(tmp_path, tar="exec sleep 30")})  # a tar that stalls
    model = _model(tmp_path)
    cache = host.remote_home / "cache"
    folder = cache / "models" / _sha(model)

    async def go():
        async with _connect(host) as conn:
            task = asyncio.create_task(ship(conn, model, str(cache), host="slow"))
            for _ in range(200):  # until the temporary folder is there, at most 10 s
                if folder.is_dir() and os.listdir(folder):
                    break
                await asyncio.sleep(0.05)
            assert not task.done() and os.listdir(folder)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    _run(go())
    assert os.listdir(folder) == []


def test_a_host_without_sftp_or_tar_is_said(make_ssh_host, tmp_path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    host = make_ssh_host(sftp=False, env={"PATH": str(empty)})  # the shell's builtins, and no tar
    (host.remote_home / "run").mkdir()

    async def go():
        async with _connect(host) as conn:
            return await fetch(conn, str(host.remote_home / "run"), tmp_path / "out", host="board")

    with pytest.raises(TransferError) as caught:
        _run(go())
    assert "board has no SFTP subsystem and no tar command" in caught.value.problem
    assert "install tar on board, or enable SFTP" in caught.value.fix


def test_a_plan_on_a_host_without_sftp_ships_fetches_and_says_how(make_ssh_host, tmp_path) -> None:
    """The whole plan through a no-SFTP host (a scripted engine): the model file goes as a tar stream, the run's
    folder comes back as one, the progress lines and remote-run.json say so."""
    host = make_ssh_host(planner=SCRIPTED, sftp=False)
    model = _model(tmp_path)
    plan = subprocess.run([*CLI, "plan", "--host", host.alias, "--remote-planner", SCRIPTED, "--model", str(model),
                           "--target", "cpu", "--quick"], cwd=tmp_path, env=host.env, capture_output=True,
                          text=True, timeout=180)
    assert plan.returncode == 0, plan.stderr
    assert "[host1] shipping: model.onnx sent as a tar stream over the command channel" in plan.stderr
    assert "as a tar stream over the command channel (the host has no SFTP subsystem)" in plan.stderr.split(
        "[host1] fetching: ", 1)[1].splitlines()[0]
    folder = next((tmp_path / "reports").glob("host1-*"))
    assert json.loads((folder / "results.json").read_text())["status"] == "ok"
    assert json.loads((folder / "remote-run.json").read_text())["transfer"] == TAR
    shipped = host.remote_home / ".cache" / "planner" / "models" / _sha(model) / "model.onnx"
    assert _sha(shipped) == _sha(model)


# Hosts started inside the test, whose tar stream is hostile


@contextlib.asynccontextmanager
async def _tar_host(stream: bytes) -> AsyncIterator[asyncssh.SSHClientConnection]:
    """An SSH server with no SFTP subsystem on a free 127.0.0.1 port, whose every command writes `stream` and
    exits 0; and a client connection to it."""

    async def answer(process: asyncssh.SSHServerProcess) -> None:
        process.stdout.write(stream)
        await process.stdout.drain()
        process.exit(0)

    async with _server(process_factory=answer, encoding=None) as conn:
        yield conn


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", linkname: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, len(data), linkname, 0o644
    return info, data


def _tar(*members: tuple) -> bytes:
    """A tar stream holding `members` ((TarInfo, bytes) pairs), names written as given."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, errors="surrogateescape") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def _fetch_from(stream: bytes, local: Path, host: str = "evil"):
    async def go():
        async with _tar_host(stream) as conn:
            return await fetch(conn, "/run", local, host=host)

    return _run(go())


@pytest.mark.parametrize("name", ["../../escape", "/etc/x", "./../x", "a/../../b", "", "sub\\..\\..\\x",
                                  "bell\x07", "\udcff\udcfename"])
def test_a_hostile_member_name_writes_nothing_anywhere(tmp_path, name) -> None:
    stream = _tar(_member(".", tarfile.DIRTYPE), _member("./results.json", data=b"{}"), _member(name, data=b"evil"))
    local = tmp_path / "work" / "out" / "host1"
    before = _everything_under(tmp_path)
    with pytest.raises(UnsafeRemotePathError) as caught:
        _fetch_from(stream, local)
    assert "evil listed a name in /run that could write outside the local folder" in caught.value.problem
    assert "refused" in caught.value.problem or "not UTF-8" in caught.value.problem
    assert _everything_under(tmp_path) - before == {"work", "work/out"}  # only the out folder's (empty) parent


@pytest.mark.parametrize("extract", ["data filter", "Python before 3.11.4"])
def test_hostile_links_and_devices_are_skipped_and_never_made(tmp_path, monkeypatch, extract) -> None:
    """Links (to outside, or to climb out through a folder of the same name) and devices are skipped; what is
    written stays under the host's folder. The same where tarfile has no extraction filter yet."""
    if extract != "data filter":
        monkeypatch.setattr(transfer, "_EXTRACT", {"set_attrs": False})
    outside = tmp_path / "outside"
    outside.mkdir()
    stream = _tar(_member("./results.json", data=b"{}"),
                  _member("passwd", tarfile.SYMTYPE, linkname="/etc/passwd"),
                  _member("d", tarfile.SYMTYPE, linkname=str(outside)),
                  _member("d/evil", data=b"through the link"),
                  _member("up", tarfile.SYMTYPE, linkname="../../.."),
                  _member("copy", tarfile.LNKTYPE, linkname="results.json"),
                  _member("pipe", tarfile.FIFOTYPE), _member("tty", tarfile.CHRTYPE))
    local = tmp_path / "out" / "host1"
    fetched = _fetch_from(stream, local)
    assert fetched.way == TAR
    assert fetched.skipped == {"passwd": "a link (links are never followed)", "d": "a link (links are never followed)",
                               "up": "a link (links are never followed)", "pipe": "not a regular file or folder",
                               "tty": "not a regular file or folder"}
    assert os.listdir(outside) == []
    assert not any(p.is_symlink() for p in local.rglob("*"))
    assert (local / "d" / "evil").read_bytes() == b"through the link"  # a plain folder inside, not the link
    assert (local / "copy").read_bytes() == b"{}"  # a hard link to a file of the stream is a copy, as SFTP gives
    assert sorted(str(p.relative_to(local)) for p in fetched.files) == ["copy", "d/evil", "results.json"]


def test_a_hard_link_out_of_the_folder_is_refused(tmp_path) -> None:
    stream = _tar(_member("./results.json", data=b"{}"), _member("x", tarfile.LNKTYPE, linkname="../../etc/passwd"))
    with pytest.raises(UnsafeRemotePathError, match="could write outside the local folder"):
        _fetch_from(stream, tmp_path / "out")
    assert os.listdir(tmp_path) == []


def test_a_stream_that_is_not_tar_is_said(tmp_path) -> None:
    """A login script that prints to stdout spoils the stream: said, with where to look."""
    with pytest.raises(TransferError) as caught:
        _fetch_from(b"Welcome to the board!\n" * 2000, tmp_path / "out", host="board")
    assert "What board sent for /run is not a tar stream" in caught.value.problem
    assert "login scripts" in caught.value.fix
    assert os.listdir(tmp_path) == []


# Finding out that a host has no SFTP, once per connection


class _FakeConnection:
    """Just enough of a connection for the detection: start_sftp_client raises what it is given."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.asked = 0

    async def start_sftp_client(self):
        self.asked += 1
        raise self.error

    def is_closed(self) -> bool:
        return False


@pytest.mark.parametrize("error", [
    asyncssh.ChannelOpenError(asyncssh.constants.OPEN_REQUEST_SESSION_FAILED, "Session request failed"),
    asyncssh.SFTPConnectionLost("0 bytes read on a total of 4 expected bytes"),  # sftp-server not there
    asyncssh.SFTPBadMessage("Expected version message"),  # something else answered
])
def test_no_sftp_is_found_once_per_connection(error) -> None:
    conn = _FakeConnection(error)

    async def go():
        return [await transfer_way(conn, host="board") for _ in range(3)]  # type: ignore[arg-type]

    assert asyncio.run(go()) == [TAR, TAR, TAR] and conn.asked == 1


def test_a_host_that_refuses_every_session_is_not_taken_for_one_without_sftp() -> None:
    conn = _FakeConnection(asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "Not allowed"))
    with pytest.raises(TransferError, match="board refused a session for a file transfer: Not allowed"):
        asyncio.run(transfer_way(conn, host="board"))  # type: ignore[arg-type]
