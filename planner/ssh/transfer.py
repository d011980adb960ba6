"""Files to and from a host: a model into the host's cache, a run's folder back home.

`ship` puts a local model file into `<cache>/models/<sha256>/<name>` on the host, unless a file of the same
size is there already (the folder is named by the content's hash, so the same name and size there is the same
file): a model the host has is never sent twice. The upload goes to a temporary name beside it and is renamed
only once complete, so an interrupted or failed upload (a full disk above all) never leaves a half-written
model under the cached name; the temporary file is removed.

`fetch` copies a run's folder from the host into a local folder. The host is not trusted: every name it
lists is checked before anything is written (no absolute path, no `..`, no separators or control characters
in a name, nothing that is not UTF-8), a link is skipped and never followed, special files are skipped, and
the number of files, the depth and the total size are bounded. Everything is written into a fresh temporary
folder beside the destination and moved into place only when all of it arrived, replacing an older copy.

Files go over SFTP where the host's SSH server has it. A minimal sshd or Dropbear on many boards has no SFTP
subsystem: the first transfer on a connection finds that out (`transfer_way`, asked once per connection) and
every transfer on it then goes as a tar stream over the command channel instead, as Ansible's piped transfer
does: `tar -xf -` on the host reads what Python's tarfile writes here, and `tar -cf -` there writes what
tarfile reads here. The same rules hold both ways: each member's name is checked as a listed name is, links
and special files are skipped, the same bounds apply, and what is written goes through tarfile's "data"
extraction filter as well. `Shipped.way` and `Fetched.way` say which way was used.
"""

from __future__ import annotations

import asyncio
import copy
import errno
import hashlib
import io
import logging
import os
import secrets
import shlex
import shutil
import tarfile
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar, cast

import asyncssh
from asyncssh.constants import OPEN_REQUEST_SESSION_FAILED

from planner.errors import PlannerError

log = logging.getLogger(__name__)

CHUNK = 4 << 20
"""Bytes read or written at a time (asyncssh splits a large request into parallel SFTP requests itself)."""

MAX_FILES = 10_000
"""At most this many files and folders come back from one fetch: a run holds a few dozen."""

MAX_BYTES = 5 << 30
"""At most this many bytes come back from one fetch (5 GiB: a run's deploy packages hold model copies)."""

MAX_DEPTH = 32
"""At most this many folders deep."""

MAX_NAME_BYTES = 255
"""The longest file name (in UTF-8 bytes) a local file system takes."""

SFTP = "sftp"
"""The way files go where the host's SSH server has an SFTP subsystem."""

TAR = "tar"
"""The way files go where it has none: a tar stream over the command channel (`tar -cf -` / `tar -xf -` there)."""

WAY_WORDS = {SFTP: "over SFTP", TAR: "as a tar stream over the command channel (the host has no SFTP subsystem)"}
"""Each way in words, for progress lines and logs."""

SFTP_START_TIMEOUT_S = 30.0
"""How long starting SFTP may take before the host counts as having none: one round trip on any working link."""

REMOTE_COMMAND_TIMEOUT_S = 60.0
"""How long a short shell command on the host (the check before a tar upload, a cleanup) may take."""

EXIT_WAIT_S = 30.0
"""How long a remote tar may take to exit once its stream has ended."""

CLEANUP_TIMEOUT_S = 5.0
"""How long removing a cancelled upload's temporary folder may take (channel.py's CANCEL_CLEANUP_S waits as long)."""

TAR_OVERHEAD_BYTES = MAX_FILES * 16 * tarfile.BLOCKSIZE
"""What a tar stream may hold beyond its files' bytes: per entry a header, an extended header for a long name and
the padding (a few blocks; 16 leaves room), then the end-of-archive record."""

STDERR_LINES = 5
"""How many of a remote tar's last stderr lines are kept, to quote when it fails."""

_EXTRACT: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {"set_attrs": False}
"""How a fetched member is written: through tarfile's "data" filter (PEP 706, Python 3.11.4 on; it refuses what
would land outside the folder, links out of it and devices, and drops owners and odd modes). On an older 3.11 the
checks `_untar` makes before extracting are what keeps it in its folder, and no owner or mode is set."""

_FILTER_ERRORS: tuple[type[Exception], ...] = (tarfile.FilterError,) if hasattr(tarfile, "FilterError") else ()
"""What the "data" filter raises for a member it refuses (nothing before Python 3.11.4, which has no filter)."""

_NOT_A_FOLDER = "planner-fetch: not a folder"
"""What the remote side of a tar fetch prints (on stderr) when the run's folder is not there."""

T = TypeVar("T")


class TransferError(PlannerError):
    """Sending a file to a host, or fetching one back, failed."""


class RemoteDiskFullError(TransferError):
    """The host's disk (or the user's quota there) is full."""


class UnsafeRemotePathError(TransferError):
    """A host listed a name that could write outside the local folder, or more than a run ever holds."""


@dataclass(frozen=True)
class Shipped:
    """A model file in a host's cache: where it is, its content hash, and whether this call sent it."""

    remote_path: str
    sha256: str
    size: int
    sent: bool  # False: the host had it already, nothing was sent
    way: str = SFTP  # SFTP, or TAR where the host has no SFTP subsystem


@dataclass(frozen=True)
class Fetched:
    """A run's folder, fetched: the local files written, and what was left on the host and why."""

    files: list[Path]
    skipped: dict[str, str] = field(default_factory=dict)  # remote path (relative) -> why it was not fetched
    way: str = SFTP  # SFTP, or TAR where the host has no SFTP subsystem


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's content, read in chunks (a model may not fit in memory twice)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _host_name(conn: asyncssh.SSHClientConnection, host: str | None) -> str:
    """The host as the caller names it, else the address the connection reached."""
    if host:
        return host
    peer = conn.get_extra_info("peername")
    return str(peer[0]) if peer else "the host"


# Which way files go: SFTP, or a tar stream where the host has no SFTP subsystem


_WAYS: weakref.WeakKeyDictionary[asyncssh.SSHClientConnection, str] = weakref.WeakKeyDictionary()
"""The way found for each open connection: the host's SSH server does not change under a connection."""


def known_way(conn: asyncssh.SSHClientConnection) -> str | None:
    """The way files go on this connection, where a transfer (or `transfer_way`) found it already; else None."""
    return _WAYS.get(conn)


async def transfer_way(conn: asyncssh.SSHClientConnection, *, host: str | None = None) -> str:
    """How files go to and from this connection's host: SFTP, or TAR where it has no SFTP subsystem (asked once per
    connection; every transfer on it then goes the same way)."""
    if conn not in _WAYS:
        sftp = await _sftp_or_none(conn, _host_name(conn, host))
        if sftp is not None:
            async with sftp:
                pass
    return _WAYS[conn]


async def _sftp_or_none(conn: asyncssh.SSHClientConnection, where: str) -> asyncssh.SFTPClient | None:
    """An SFTP client on the connection, or None where the host has no SFTP subsystem (then noted for the
    connection, so it is asked once)."""
    if _WAYS.get(conn) == TAR:
        return None
    try:
        sftp = await asyncio.wait_for(conn.start_sftp_client(), SFTP_START_TIMEOUT_S)
    except asyncssh.ChannelOpenError as exc:
        if conn.is_closed():
            raise TransferError(f"The connection to {where} was lost: {exc.reason}",
                                "check the network and the host, and run again") from None
        if exc.code != OPEN_REQUEST_SESSION_FAILED:
            # Not a refused subsystem: the host refuses any session, so a tar stream could not go either.
            raise TransferError(f"{where} refused a session for a file transfer: {exc.reason}",
                                f"check that `ssh {where}` runs commands there") from None
        why = "its SSH server refused the SFTP subsystem"
    except (asyncssh.SFTPConnectionLost, asyncssh.SFTPBadMessage) as exc:
        if conn.is_closed():
            raise TransferError(f"The connection to {where} was lost: {exc.reason}",
                                "check the network and the host, and run again") from None
        # The subsystem was accepted but nothing spoke SFTP: a configured sftp-server binary that is not there
        # (the shell says "not found" and exits), or a login script that prints before it.
        why = f"its SFTP subsystem ended without answering ({exc.reason})"
    except asyncio.TimeoutError:
        why = f"its SFTP subsystem did not answer in {SFTP_START_TIMEOUT_S:.0f} s"
    except (asyncssh.Error, OSError) as exc:
        raise TransferError(f"Starting a file transfer with {where} failed: {exc}",
                            "check the network and the host, and run again") from None
    else:
        _WAYS[conn] = SFTP
        return sftp
    _WAYS[conn] = TAR
    log.info("%s: %s; files go %s", where, why, WAY_WORDS[TAR])
    return None


async def _run_short(conn: asyncssh.SSHClientConnection, command: str, where: str) -> asyncssh.SSHCompletedProcess:
    """Run a short shell command on the host; TransferError where it cannot be run or takes too long."""
    try:
        return await conn.run(command, check=False, timeout=REMOTE_COMMAND_TIMEOUT_S, errors="replace")
    except asyncssh.TimeoutError:
        raise TransferError(f"{where} took more than {REMOTE_COMMAND_TIMEOUT_S:.0f} s to answer a short command",
                            "check the host's load and its disk, and run again") from None
    except (asyncssh.Error, OSError) as exc:
        raise TransferError(f"The connection to {where} was lost: {exc}",
                            "check the network and the host, and run again") from None


def _text(value: object) -> str:
    """A process's output as text (asyncssh gives str, or bytes where an encoding of None was asked for)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _last_line(text: str) -> str:
    """The last non-empty line of a remote command's output, short enough to quote."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _no_tar(status: int | None, stderr: str) -> bool:
    """Did the shell find no `tar` (127: not found; 126: there but not runnable)?"""
    return status in (126, 127) or "tar: not found" in stderr or "tar: command not found" in stderr


def _no_tar_error(where: str) -> TransferError:
    """The error for a host that has neither SFTP nor tar: nothing can go either way, and how to fix that."""
    return TransferError(f"{where} has no SFTP subsystem and no tar command, so no file can go to or from it",
                         f"install tar on {where}, or enable SFTP in its SSH server (OpenSSH: a `Subsystem sftp` "
                         "line in sshd_config; Dropbear: an sftp-server binary, e.g. the openssh-sftp-server "
                         "package)")


async def _collect_tail(reader: asyncssh.SSHReader[bytes], into: deque[str]) -> None:
    """Keep the last lines a remote command writes to stderr (read as they come, so it never stalls the channel)."""
    try:
        while line := await reader.readline():
            text = line.decode("utf-8", "replace").strip()
            if text:
                into.append(text[:200])
    except (asyncssh.Error, OSError):
        return


# Shipping a model


async def ship(conn: asyncssh.SSHClientConnection, local: Path, cache_dir: str, *, host: str | None = None
               ) -> Shipped:
    """Put `local` into `<cache_dir>/models/<sha256>/<name>` on the host unless it is there; say whether it was sent,
    and which way (SFTP, or a tar stream where the host has no SFTP subsystem)."""
    where = _host_name(conn, host)
    if not local.is_file():
        raise TransferError(f"Cannot send {local} to {where}: it is not a file", "give the model file's path")
    size = local.stat().st_size
    sha = await asyncio.to_thread(file_sha256, local)
    folder = f"{cache_dir.rstrip('/')}/models/{sha}"
    dest = f"{folder}/{local.name}"
    sftp = await _sftp_or_none(conn, where)
    if sftp is None:
        return await _ship_tar(conn, local, folder, Shipped(dest, sha, size, sent=True, way=TAR), where)
    async with sftp:
        if await _size_of(sftp, dest) == size:
            log.info("%s already has %s (%s), nothing sent", where, local.name, sha[:12])
            return Shipped(dest, sha, size, sent=False)
        temp = f"{dest}.part-{secrets.token_hex(6)}"
        try:
            await sftp.makedirs(folder, exist_ok=True)
            free = await _free_bytes(sftp, folder)
            if free is not None and free < size:
                raise _disk_full(where, local.name, size, free)
            await _upload(sftp, local, temp)
            await _rename_over(sftp, temp, dest)
        except asyncssh.SFTPError as exc:
            await _remove_quietly(sftp, temp)
            raise await _upload_error(sftp, exc, where, local, folder) from None
        except BaseException:
            # Cancelled (Ctrl-C) or failed otherwise: nothing half-written stays behind under any name.
            await _remove_quietly(sftp, temp)
            raise
    log.info("sent %s (%d bytes) to %s:%s %s", local.name, size, where, dest, WAY_WORDS[SFTP])
    return Shipped(dest, sha, size, sent=True)


async def ship_model(conn: asyncssh.SSHClientConnection, local: Path, cache_dir: str, *,
                     host: str | None = None) -> str:
    """Put a model file into the host's SHA-256 cache (see `ship`); returns its remote path."""
    return (await ship(conn, local, cache_dir, host=host)).remote_path


async def _size_of(sftp: asyncssh.SFTPClient, path: str) -> int | None:
    """The size of a regular file on the host, None where there is none."""
    try:
        attrs = await sftp.stat(path)
    except asyncssh.SFTPError:
        return None
    return attrs.size if attrs.type == asyncssh.FILEXFER_TYPE_REGULAR else None


async def _free_bytes(sftp: asyncssh.SFTPClient, path: str) -> int | None:
    """The bytes a user may still write on the file system holding `path`; None where the server cannot say."""
    try:
        vfs = await sftp.statvfs(path)
    except asyncssh.SFTPError:
        return None
    return vfs.bavail * (vfs.frsize or vfs.bsize) if vfs.blocks else None


async def _upload(sftp: asyncssh.SFTPClient, local: Path, remote: str) -> None:
    """Copy a local file to a remote path, chunk by chunk."""
    async with sftp.open(remote, "wb") as f:
        with open(local, "rb") as src:
            while chunk := src.read(CHUNK):
                await f.write(chunk)


async def _rename_over(sftp: asyncssh.SFTPClient, temp: str, dest: str) -> None:
    """Rename `temp` to `dest`, replacing it: the POSIX rename where the server has it, else remove, then rename."""
    try:
        await sftp.posix_rename(temp, dest)
        return
    except asyncssh.SFTPOpUnsupported:
        pass
    await _remove_quietly(sftp, dest)  # a stale copy of another size (an older, interrupted transfer's rename)
    await sftp.rename(temp, dest)


async def _remove_quietly(sftp: asyncssh.SFTPClient, path: str) -> None:
    """Remove a remote file if it is there; a connection already gone leaves nothing more to do."""
    try:
        await sftp.remove(path)
    except (asyncssh.SFTPError, asyncssh.Error, OSError):
        pass


def _disk_full(where: str, name: str, size: int, free: int | None) -> RemoteDiskFullError:
    room = f" ({free / 1e6:.1f} MB free, {size / 1e6:.1f} MB needed)" if free is not None else ""
    return RemoteDiskFullError(f"{where}'s disk is full: {name} could not be stored there{room}; nothing "
                               f"half-written was left", f"free some space on {where} (its ~/.cache/planner/models "
                               f"holds earlier models), or set PLANNER_CACHE_DIR there to a larger disk")


async def _upload_error(sftp: asyncssh.SFTPClient, exc: asyncssh.SFTPError, where: str, local: Path,
                        folder: str) -> TransferError:
    """An SFTP failure during an upload, in words: a full disk said as such where the server or the space tells."""
    reason = str(exc.reason or exc)
    if isinstance(exc, (asyncssh.SFTPNoSpaceOnFilesystem, asyncssh.SFTPQuotaExceeded)) or any(
            word in reason.lower() for word in ("no space", "quota", "disk full")):
        return _disk_full(where, local.name, local.stat().st_size, None)
    if isinstance(exc, asyncssh.SFTPFailure):
        # OpenSSH's server says only "Failure" for a full disk: the free space tells.
        free = await _free_bytes(sftp, folder)
        if free is not None and free < local.stat().st_size:
            return _disk_full(where, local.name, local.stat().st_size, free)
    return TransferError(f"Sending {local.name} to {where} failed: {reason}",
                         f"check that {folder} on {where} is writable")


async def _ship_tar(conn: asyncssh.SSHClientConnection, local: Path, folder: str, shipped: Shipped, where: str
                    ) -> Shipped:
    """`ship` for a host without SFTP: one shell command says what the cache holds and how much room there is, then
    a one-file tar stream goes into `tar -xf -` there, in a temporary folder beside the cached name, and is renamed
    into place only once complete (the temporary folder is removed whatever happens)."""
    q = shlex.quote
    dest, size = shipped.remote_path, shipped.size
    check = await _run_short(conn, f"mkdir -p {q(folder)} || exit 1; "
                                   f"if [ -f {q(dest)} ]; then printf 'size=%s\\n' \"$(wc -c < {q(dest)})\"; fi; "
                                   f"printf 'df=%s\\n' \"$(df -Pk {q(folder)} 2>/dev/null | tail -n 1)\"", where)
    if check.exit_status != 0:
        raise TransferError(f"Sending {local.name} to {where} failed: "
                            f"{_last_line(_text(check.stderr)) or f'exit status {check.exit_status}'}",
                            f"check that {folder} on {where} is writable")
    values = dict(line.split("=", 1) for line in _text(check.stdout).splitlines() if "=" in line)
    if values.get("size", "").strip() == str(size):
        log.info("%s already has %s (%s), nothing sent", where, local.name, shipped.sha256[:12])
        return Shipped(dest, shipped.sha256, size, sent=False, way=TAR)
    # df -P: "Filesystem 1024-blocks Used Available Capacity Mounted-on", in KiB with -k (POSIX).
    columns = values.get("df", "").split()
    free = int(columns[3]) * 1024 if len(columns) >= 4 and columns[3].isdigit() else None
    if free is not None and free < size:
        raise _disk_full(where, local.name, size, free)
    temp = f"{folder}/.part-{secrets.token_hex(6)}"
    command = (f"mkdir {q(temp)} || exit 1; tar -xf - -C {q(temp)} && mv -f {q(f'{temp}/{local.name}')} {q(dest)}; "
               f"s=$?; rm -rf {q(temp)}; exit $s")
    try:
        process = await conn.create_process(command, encoding=None)
    except (asyncssh.Error, OSError) as exc:
        raise TransferError(f"The connection to {where} was lost before {local.name} was sent: {exc}",
                            "check the network and the host, and run again") from None
    tail: deque[str] = deque(maxlen=STDERR_LINES)
    errors = asyncio.ensure_future(_collect_tail(process.stderr, tail))
    try:
        try:
            await _send_tar(process.stdin, local, size)
        except (ConnectionError, asyncssh.Error):
            pass  # tar there stopped reading (a full disk, no tar): its exit status and stderr say why, below
        completed = await _ended(process, errors, where, f"taking {local.name}")
    except BaseException:
        # Cancelled (Ctrl-C) or failed otherwise: the remote tar ends on the cut stream and its command removes the
        # temporary folder; removing it from here too covers a command that never got that far.
        process.close()
        errors.cancel()
        await _remove_remote_quietly(conn, temp)
        raise
    status = completed.exit_status
    stderr = "\n".join([*tail, _text(completed.stderr)])
    if status == 0:
        log.info("sent %s (%d bytes) to %s:%s %s", local.name, size, where, dest, WAY_WORDS[TAR])
        return shipped
    if status is None and completed.exit_signal is None:
        raise TransferError(f"The connection to {where} was lost while sending {local.name}; nothing half-written "
                            "was left under its name", "check the network and the host, and run again")
    if _no_tar(status, stderr):
        raise _no_tar_error(where)
    if any(word in stderr.lower() for word in ("no space", "quota", "disk full")):
        raise _disk_full(where, local.name, size, None)
    raise TransferError(f"Sending {local.name} to {where} failed: {_last_line(stderr) or f'exit status {status}'}",
                        f"check that {folder} on {where} is writable")


async def _send_tar(stdin: asyncssh.SSHWriter[bytes], local: Path, size: int) -> None:
    """Write a tar stream holding `local` alone, under its file name, to the remote tar's stdin, then end it."""
    info = tarfile.TarInfo(local.name)
    info.size, info.mode, info.mtime = size, 0o644, int(local.stat().st_mtime)
    # PAX: plain ustar (which every tar reads) unless the name needs more; then the POSIX extended header.
    header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    stdin.write(header)
    sent = 0
    with open(local, "rb") as src:
        while sent < size and (chunk := src.read(min(CHUNK, size - sent))):
            stdin.write(chunk)
            sent += len(chunk)
            await stdin.drain()
    if sent != size:
        raise TransferError(f"{local} changed while it was being sent", "send it again once nothing writes to it")
    end = tarfile.NUL * (-size % tarfile.BLOCKSIZE + 2 * tarfile.BLOCKSIZE)  # the last block's padding, the end mark
    total = len(header) + size + len(end)
    stdin.write(end + tarfile.NUL * (-total % tarfile.RECORDSIZE))  # whole records, as tarfile itself writes them
    await stdin.drain()
    stdin.write_eof()


async def _ended(process: asyncssh.SSHClientProcess[bytes], errors: asyncio.Future[None], where: str, doing: str
                 ) -> asyncssh.SSHCompletedProcess:
    """The remote tar's exit, once its stream has ended (its stderr read to the end too); TransferError where it
    does not come in time."""
    try:
        completed = await asyncio.wait_for(process.wait(), EXIT_WAIT_S)
    except asyncio.TimeoutError:
        raise TransferError(f"tar on {where} did not finish {doing} within {EXIT_WAIT_S:.0f} s of the stream's end",
                            f"check the load and the disk of {where}, and run again") from None
    await asyncio.wait([errors], timeout=EXIT_WAIT_S)
    return completed


async def _remove_remote_quietly(conn: asyncssh.SSHClientConnection, path: str) -> None:
    """Remove a remote file or folder if it is there, in a bounded time; a connection already gone leaves nothing
    more to do."""
    try:
        await asyncio.wait_for(conn.run(f"rm -rf {shlex.quote(path)}", check=False), CLEANUP_TIMEOUT_S)
    except (asyncssh.Error, OSError, asyncio.TimeoutError):
        pass


# Fetching a run's folder


def safe_name(raw: bytes | str) -> str:
    """One name from a remote listing, as a local file name; UnsafeRemotePathError where it could escape or mislead.

    Refused: empty, `.` and `..`, anything with `/`, a backslash, NUL or another control character, a name
    that is not UTF-8, and one longer than a file system takes.
    """
    if isinstance(raw, bytes):
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnsafeRemotePathError(f"the name {raw!r} is not UTF-8") from None
    else:
        name = raw
    why = ("it is empty" if not name else
           "it names a folder above" if name in (".", "..") else
           "it holds a path separator" if "/" in name or "\\" in name else
           "it holds a control character" if any(ord(c) < 32 or ord(c) == 127 for c in name) else
           "it is too long" if len(name.encode("utf-8")) > MAX_NAME_BYTES else "")
    if why:
        raise UnsafeRemotePathError(f"the name {name!r} is refused: {why}")
    return name


def safe_relative(parts: Sequence[bytes | str]) -> PurePosixPath:
    """A relative path from names a host listed, each checked with `safe_name`: it can only lead down."""
    if not parts:
        raise UnsafeRemotePathError("an empty path is refused")
    if len(parts) > MAX_DEPTH:
        raise UnsafeRemotePathError(f"a path {len(parts)} folders deep is refused (at most {MAX_DEPTH})")
    return PurePosixPath(*(safe_name(p) for p in parts))


@dataclass
class _Budget:
    """What one fetch may still take: entries and bytes."""

    entries: int = MAX_FILES
    bytes: int = MAX_BYTES

    def take_entry(self, where: str, remote_dir: str) -> None:
        self.entries -= 1
        if self.entries < 0:
            raise UnsafeRemotePathError(f"{where}:{remote_dir} holds more than {MAX_FILES} files and folders, more "
                                        f"than a run ever writes; nothing was fetched")

    def take_bytes(self, n: int, where: str, remote_dir: str) -> None:
        self.bytes -= n
        if self.bytes < 0:
            raise UnsafeRemotePathError(f"{where}:{remote_dir} holds more than {MAX_BYTES / 2**30:.0f} GiB, more than "
                                        f"a run ever writes; nothing was fetched")


async def fetch(conn: asyncssh.SSHClientConnection, remote_dir: str, local_dir: Path, *, host: str | None = None
                ) -> Fetched:
    """Copy the host's `remote_dir` into `local_dir` (replacing an older copy), checking every name on the way; over
    SFTP, or as a tar stream where the host has no SFTP subsystem (`Fetched.way` says which)."""
    where = _host_name(conn, host)
    local_dir = local_dir.absolute()
    local_dir.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{local_dir.name}.fetch-", dir=local_dir.parent))
    try:
        sftp = await _sftp_or_none(conn, where)
        if sftp is None:
            way = TAR
            written, skipped = await _fetch_tar(conn, remote_dir, temp, where)
        else:
            way = SFTP
            async with sftp:
                written, skipped = await _fetch_sftp(sftp, remote_dir, temp, where)
        os.chmod(temp, 0o755)  # mkdtemp's folder is private; the fetched folder reads like any other
        _move_into_place(temp, local_dir)
    except OSError as exc:
        shutil.rmtree(temp, ignore_errors=True)
        if isinstance(exc, ConnectionError):
            raise TransferError(f"The connection to {where} was lost while fetching {remote_dir}; nothing was "
                                "fetched", "run the fetch again (`planner attach` fetches a run)") from None
        raise TransferError(f"Writing what came from {where} into {local_dir.parent} failed: "
                            f"{exc.strerror or exc}; nothing half-written was left",
                            "free some space there, or choose another --out folder") from None
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    for name, why in skipped.items():
        log.warning("not fetched from %s: %s (%s)", where, name, why)
    log.info("fetched %s from %s %s", remote_dir, where, WAY_WORDS[way])
    return Fetched(sorted(local_dir / rel for rel in written), skipped, way=way)


async def _fetch_sftp(sftp: asyncssh.SFTPClient, remote_dir: str, temp: Path, where: str
                      ) -> tuple[list[PurePosixPath], dict[str, str]]:
    """`fetch` over SFTP: the folder listed and copied entry by entry into `temp`; the files written, and those
    skipped with why."""
    try:
        top = await sftp.stat(remote_dir)
    except asyncssh.SFTPError as exc:
        raise TransferError(f"Cannot fetch {remote_dir} from {where}: {exc.reason}",
                            "check the run's folder on the host") from None
    if top.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
        raise TransferError(f"Cannot fetch {remote_dir} from {where}: it is not a folder",
                            "check the run's folder on the host")
    skipped: dict[str, str] = {}
    try:
        written = await _copy_tree(sftp, remote_dir.encode("utf-8"), (), temp, _Budget(), skipped, where, remote_dir)
    except asyncssh.SFTPError as exc:
        raise TransferError(f"Fetching {remote_dir} from {where} failed: {exc.reason}; nothing was "
                            f"fetched", "run the fetch again (`planner attach` fetches a run)") from None
    return written, skipped


async def fetch_tree(conn: asyncssh.SSHClientConnection, remote_dir: str, local_dir: Path, *,
                     host: str | None = None) -> list[Path]:
    """Copy a run's folder back into `local_dir` safely (see `fetch`); returns the local files written."""
    return (await fetch(conn, remote_dir, local_dir, host=host)).files


async def _copy_tree(sftp: asyncssh.SFTPClient, remote: bytes, parts: tuple[str, ...], temp: Path, budget: _Budget,
                     skipped: dict[str, str], where: str, remote_dir: str) -> list[PurePosixPath]:
    """Copy one remote folder's entries under temp/parts, depth first; returns the relative paths of the files."""
    written: list[PurePosixPath] = []
    entries = []
    async for entry in sftp.scandir(remote):
        raw = entry.filename if isinstance(entry.filename, bytes) else str(entry.filename).encode("utf-8")
        if raw in (b".", b".."):
            continue
        budget.take_entry(where, remote_dir)
        if len(parts) >= MAX_DEPTH:
            raise UnsafeRemotePathError(f"{where}:{remote_dir} holds folders more than {MAX_DEPTH} deep, deeper than "
                                        "a run ever writes; nothing was fetched", f"check {remote_dir} on {where}")
        try:
            rel = safe_relative([*parts, raw])
        except UnsafeRemotePathError as exc:
            raise UnsafeRemotePathError(
                f"{where} listed a name in {remote_dir} that could write outside the local folder ({exc.problem}); "
                "nothing was fetched", f"check what wrote into {remote_dir} on {where}") from None
        entries.append((raw, rel, entry.attrs))
    for raw, rel, attrs in entries:
        path = remote.rstrip(b"/") + b"/" + raw
        kind = attrs.type
        if kind == asyncssh.FILEXFER_TYPE_DIRECTORY:
            (temp / rel).mkdir(mode=0o755)
            written += await _copy_tree(sftp, path, rel.parts, temp, budget, skipped, where, remote_dir)
        elif kind == asyncssh.FILEXFER_TYPE_REGULAR:
            declared = attrs.size or 0
            budget.take_bytes(declared, where, remote_dir)
            await _download(sftp, path, temp / rel, declared, budget, where, remote_dir)
            written.append(rel)
        else:
            skipped[str(rel)] = ("a link (links are never followed)" if kind == asyncssh.FILEXFER_TYPE_SYMLINK
                                 else "not a regular file or folder")
    return written


async def _download(sftp: asyncssh.SFTPClient, remote: bytes, local: Path, declared: int, budget: _Budget,
                    where: str, remote_dir: str) -> None:
    """Copy one remote file to a new local file; bytes beyond its listed size count against the budget as they come."""
    # O_EXCL | O_NOFOLLOW: the file is new in a folder this fetch made, never something already there.
    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as out:
        async with sftp.open(remote, "rb") as f:
            received, charged = 0, declared  # the listed size was taken from the budget already
            while chunk := await f.read(CHUNK):
                received += len(chunk)
                if received > charged:
                    budget.take_bytes(received - charged, where, remote_dir)
                    charged = received
                out.write(cast(bytes, chunk))  # opened "rb": asyncssh gives bytes


# Fetching as a tar stream, where the host has no SFTP subsystem


class _StoppedError(Exception):
    """The fetch was cancelled: the thread reading the stream stops at its next read."""


class _ChannelStream(io.RawIOBase):
    """A remote command's stdout as a blocking file for a thread (tarfile reads it there): each read is handed to
    the connection's loop. The bytes that may come are bounded (`cap`)."""

    def __init__(self, reader: asyncssh.SSHReader[bytes], loop: asyncio.AbstractEventLoop, cap: int, where: str,
                 remote_dir: str) -> None:
        super().__init__()
        self.reader = reader
        self.loop = loop
        self.cap = cap
        self.where = where
        self.remote_dir = remote_dir
        self.received = 0
        self.ended = False  # the remote side ended the stream (EOF came)
        self.stopped = threading.Event()

    def readable(self) -> bool:
        """A stream to read from."""
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]  # RawIOBase's is wider
        """Fill `buffer` with what the remote wrote next (waiting for it); 0 at its end."""
        if self.stopped.is_set():
            raise _StoppedError
        try:
            data = asyncio.run_coroutine_threadsafe(self.reader.read(len(buffer)), self.loop).result()
        except (asyncssh.Error, OSError) as exc:
            raise ConnectionResetError(str(exc)) from None  # said as a lost connection by `fetch`
        if self.stopped.is_set():
            raise _StoppedError
        self.count(len(data))
        if not data:
            self.ended = True
        buffer[:len(data)] = data
        return len(data)

    def count(self, n: int) -> None:
        """Note `n` more bytes received; UnsafeRemotePathError beyond what a run's folder can hold."""
        self.received += n
        if self.received > self.cap:
            raise UnsafeRemotePathError(f"{self.where}:{self.remote_dir} holds more than {MAX_BYTES / 2**30:.0f} GiB, "
                                        "more than a run ever writes; nothing was fetched")


def _in_daemon_thread(fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
    """Run `fn(*args)` on a daemon thread; its result (or exception) comes back as a future of the running loop.

    Not asyncio.to_thread: a thread of its executor still blocked on a loop that is gone (the SSH loop is a
    daemon) would hold up the interpreter's exit, which joins those threads.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, exc: BaseException | None) -> None:
        if done.done():
            return
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(cast(T, result))

    def run() -> None:
        try:
            result, exc = fn(*args), None
        except BaseException as caught:  # noqa: BLE001 - handed to the awaiting coroutine, which raises it
            result, exc = None, caught
        try:
            loop.call_soon_threadsafe(settle, result, exc)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for the answer

    threading.Thread(target=run, name="tar-fetch", daemon=True).start()
    return done


async def _fetch_tar(conn: asyncssh.SSHClientConnection, remote_dir: str, temp: Path, where: str
                     ) -> tuple[list[PurePosixPath], dict[str, str]]:
    """`fetch` for a host without SFTP: `tar -cf - .` in the run's folder there, read here member by member into
    `temp` (see `_untar`); the files written, and those skipped with why."""
    q = shlex.quote(remote_dir)
    # COPYFILE_DISABLE: macOS's tar would add a `._NAME` file of extended attributes beside each file.
    command = (f"if [ ! -d {q} ]; then echo {shlex.quote(_NOT_A_FOLDER)} >&2; exit 1; fi; "
               f"cd {q} && COPYFILE_DISABLE=1 tar -cf - .")
    try:
        process = await conn.create_process(command, encoding=None)
        process.stdin.write_eof()
    except (asyncssh.Error, OSError) as exc:
        raise TransferError(f"The connection to {where} was lost while fetching {remote_dir}: {exc}; nothing was "
                            "fetched", "run the fetch again (`planner attach` fetches a run)") from None
    tail: deque[str] = deque(maxlen=STDERR_LINES)
    errors = asyncio.ensure_future(_collect_tail(process.stderr, tail))
    stream = _ChannelStream(process.stdout, asyncio.get_running_loop(), MAX_BYTES + TAR_OVERHEAD_BYTES, where,
                            remote_dir)
    worker = _in_daemon_thread(_untar, stream, temp, where, remote_dir)
    unreadable = ""
    try:
        try:
            # Shielded: a cancelled fetch must let the thread stop before its folder is removed.
            written, skipped = await asyncio.shield(worker)
        except tarfile.TarError as exc:
            written, skipped, unreadable = [], {}, str(exc) or type(exc).__name__
        if not unreadable:
            try:
                while chunk := await process.stdout.read(CHUNK):  # the end-of-archive record's padding
                    stream.count(len(chunk))
            except (asyncssh.Error, OSError) as exc:
                raise ConnectionResetError(str(exc)) from None  # said as a lost connection by `fetch`
        elif not stream.ended:
            process.close()  # not tar and not ended: what more it sends cannot be read either
        completed = await _ended(process, errors, where, f"sending {remote_dir}")
    except BaseException:
        stream.stopped.set()
        process.close()
        errors.cancel()
        await asyncio.wait([worker], timeout=EXIT_WAIT_S)  # the thread writes into `temp` no more
        raise
    status = completed.exit_status
    stderr = "\n".join([*tail, _text(completed.stderr)])
    if _NOT_A_FOLDER in stderr:
        raise TransferError(f"Cannot fetch {remote_dir} from {where}: it is not a folder (or not there)",
                            "check the run's folder on the host")
    if status is None and completed.exit_signal is None and not unreadable:
        raise ConnectionResetError("the channel closed without an exit status")  # said as a lost connection
    if _no_tar(status, stderr):
        raise _no_tar_error(where)
    if status != 0 and (status is not None or completed.exit_signal is not None):
        said = _last_line(stderr) or (f"exit status {status}" if status is not None else
                                      f"killed by SIG{completed.exit_signal[0] if completed.exit_signal else '?'}")
        raise TransferError(f"Fetching {remote_dir} from {where} failed: {said}; nothing was fetched",
                            "run the fetch again (`planner attach` fetches a run)")
    if unreadable:
        raise TransferError(f"What {where} sent for {remote_dir} is not a tar stream ({unreadable}); nothing was "
                            "fetched", f"check that the login scripts on {where} print nothing for a command run "
                                       "over ssh")
    return written, skipped


def _member_path(name: str, where: str, remote_dir: str) -> PurePosixPath | None:
    """A tar member's name as a path under the fetched folder (None for the folder itself: `.`), each part checked
    with `safe_name` as a listed name is; UnsafeRemotePathError where it could write outside or goes too deep."""
    raw = name.encode("utf-8", "surrogateescape")  # tarfile keeps bytes that are not UTF-8 as surrogates
    parts = raw.rstrip(b"/").split(b"/")
    while len(parts) > 1 and parts[0] == b".":
        parts.pop(0)
    if parts == [b"."]:
        return None
    if len(parts) > MAX_DEPTH:
        raise UnsafeRemotePathError(f"{where}:{remote_dir} holds folders more than {MAX_DEPTH} deep, deeper than "
                                    "a run ever writes; nothing was fetched", f"check {remote_dir} on {where}")
    try:
        if raw.startswith(b"/"):
            raise UnsafeRemotePathError(f"the name {name!r} is refused: it is an absolute path")
        return safe_relative(parts)
    except UnsafeRemotePathError as exc:
        raise UnsafeRemotePathError(
            f"{where} listed a name in {remote_dir} that could write outside the local folder ({exc.problem}); "
            "nothing was fetched", f"check what wrote into {remote_dir} on {where}") from None


def _untar(stream: _ChannelStream, temp: Path, where: str, remote_dir: str
           ) -> tuple[list[PurePosixPath], dict[str, str]]:
    """Read a tar stream into `temp`, member by member, on a thread: names checked as a listing's are (one that
    could escape fails the whole fetch), links and special files skipped and never made (a hard link to a file of
    this stream is a copy of it, as SFTP would fetch it), the bounds kept, and what is written extracted through
    tarfile's "data" filter, which refuses anything outside `temp`, links and devices once more."""
    budget = _Budget()
    written: list[PurePosixPath] = []
    files: set[PurePosixPath] = set()
    skipped: dict[str, str] = {}
    with tarfile.open(fileobj=stream, mode="r|", bufsize=CHUNK, encoding="utf-8", errors="surrogateescape") as tar:
        for member in tar:
            rel = _member_path(member.name, where, remote_dir)
            if rel is None:
                continue
            budget.take_entry(where, remote_dir)
            target = temp / rel
            if member.isreg() or member.islnk():
                if rel in files or target.is_dir():
                    raise UnsafeRemotePathError(f"{where} sent {rel} twice from {remote_dir}; nothing was fetched",
                                                f"check what wrote into {remote_dir} on {where}")
            if member.islnk() or member.issym():
                source = _member_path(member.linkname, where, remote_dir) if member.islnk() else None
                if source is None or source not in files:
                    skipped[str(rel)] = "a link (links are never followed)"
                    continue
                budget.take_bytes((temp / source).stat().st_size, where, remote_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(temp / source, target)
            elif member.isreg() or member.isdir():
                if member.isreg():
                    budget.take_bytes(member.size, where, remote_dir)
                renamed = copy.copy(member)  # written under its checked name (`./` and such dropped)
                renamed.name = str(rel)
                try:
                    tar.extract(renamed, temp, **_EXTRACT)
                except _FILTER_ERRORS as exc:
                    raise UnsafeRemotePathError(f"{where} sent a member of {remote_dir} that could write outside the "
                                                f"local folder ({exc}); nothing was fetched",
                                                f"check what wrote into {remote_dir} on {where}") from None
            else:
                skipped[str(rel)] = "not a regular file or folder"
                continue
            if not member.isdir():
                written.append(rel)
                files.add(rel)
    return written, skipped


def _move_into_place(temp: Path, local_dir: Path) -> None:
    """Put the fetched folder at local_dir, replacing an older fetch there; the old one goes only after."""
    old = None
    if local_dir.is_symlink() or local_dir.is_file():
        raise TransferError(f"Cannot fetch into {local_dir}: it is a file or a link, not a folder",
                            "remove it, or choose another --out folder")
    if local_dir.exists():
        old = local_dir.parent / f".{local_dir.name}.old-{secrets.token_hex(4)}"
        local_dir.rename(old)
    try:
        temp.rename(local_dir)
    except OSError as exc:
        if old is not None:
            old.rename(local_dir)
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise TransferError(f"Cannot fetch into {local_dir}: something else wrote there meanwhile",
                                "run the fetch again") from None
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
