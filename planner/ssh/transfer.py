"""Files to and from a host over SFTP: a model into the host's cache, a run's folder back home.

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
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import cast

import asyncssh

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


@dataclass(frozen=True)
class Fetched:
    """A run's folder, fetched: the local files written, and what was left on the host and why."""

    files: list[Path]
    skipped: dict[str, str] = field(default_factory=dict)  # remote path (relative) -> why it was not fetched


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


# Shipping a model


async def ship(conn: asyncssh.SSHClientConnection, local: Path, cache_dir: str, *, host: str | None = None
               ) -> Shipped:
    """Put `local` into `<cache_dir>/models/<sha256>/<name>` on the host unless it is there; say whether it was sent."""
    where = _host_name(conn, host)
    if not local.is_file():
        raise TransferError(f"Cannot send {local} to {where}: it is not a file", "give the model file's path")
    size = local.stat().st_size
    sha = await asyncio.to_thread(file_sha256, local)
    folder = f"{cache_dir.rstrip('/')}/models/{sha}"
    dest = f"{folder}/{local.name}"
    async with conn.start_sftp_client() as sftp:
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
    log.info("sent %s (%d bytes) to %s:%s", local.name, size, where, dest)
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
    """Copy the host's `remote_dir` into `local_dir` (replacing an older copy), checking every name on the way."""
    where = _host_name(conn, host)
    local_dir = local_dir.absolute()
    local_dir.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{local_dir.name}.fetch-", dir=local_dir.parent))
    try:
        async with conn.start_sftp_client() as sftp:
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
                written = await _copy_tree(sftp, remote_dir.encode("utf-8"), (), temp, _Budget(), skipped, where,
                                           remote_dir)
            except asyncssh.SFTPError as exc:
                raise TransferError(f"Fetching {remote_dir} from {where} failed: {exc.reason}; nothing was "
                                    f"fetched", "run the fetch again (`planner attach` fetches a run)") from None
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
    return Fetched(sorted(local_dir / rel for rel in written), skipped)


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
