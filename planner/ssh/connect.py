"""Opening an SSH connection the way `ssh` would, in batch mode, with every refusal said in words.

ssh_config is honoured (aliases, HostName, Port, User, IdentityFile, ProxyJump: asyncssh reads it), so
are the agent (SSH_AUTH_SOCK) and the key files. Nothing ever prompts: no password, no
keyboard-interactive, no passphrase; a host that only takes a password is refused and the error says how
to set up a key.

Host keys are checked against known_hosts with asyncssh's own matching, always: a host seen for the first
time is refused with its key's fingerprint unless `--accept-new-host-key` is given (then its key is
appended to known_hosts, as OpenSSH's StrictHostKeyChecking=accept-new does), and a host whose key
changed is refused whatever the flags, naming the known_hosts line that holds the old key.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from planner.errors import PlannerError
from planner.ssh.hosts import HostSpec, SshOptions

DEFAULT_PORT = 22
_ACCEPT_FLAG = "--accept-new-host-key"


class SshConnectError(PlannerError):
    """Connecting to a host over SSH failed; `host` is the host's label."""

    def __init__(self, host: str, problem: str, fix: str = "") -> None:
        self.host = host
        super().__init__(problem, fix)


class HostUnreachable(SshConnectError):  # noqa: N818 (named for what the user hit, as the spec names them)
    """The host could not be reached: its name does not resolve, nothing listens, or it does not answer in time."""


class AuthRefused(SshConnectError):  # noqa: N818 (named for what the user hit, as the spec names them)
    """The host answered but let no key in (or wants a password, which batch mode never types)."""


class HostKeyUnknown(SshConnectError):  # noqa: N818 (named for what the user hit, as the spec names them)
    """The host is not in known_hosts; `fingerprint` is its key's SHA256 fingerprint, to check before trusting it."""

    def __init__(self, host: str, problem: str, fix: str, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        super().__init__(host, problem, fix)


class HostKeyChanged(SshConnectError):  # noqa: N818 (named for what the user hit, as the spec names them)
    """The host presents another key than the one known_hosts holds for it: always refused."""


@dataclass
class _Target:
    """The host as ssh_config resolves it, and the known_hosts files that apply."""

    host: str
    port: int
    user: str
    key_host: str  # the name known_hosts files it under: HostKeyAlias, else the host
    known_files: list[Path]
    config: list[str] | tuple[()]
    keepalive_s: float | None  # None: ssh_config's ServerAliveInterval applies

    def where(self, spec: HostSpec) -> str:
        """The host's label, with where it really points when an alias or the config hides that."""
        actual = self.host if self.port == DEFAULT_PORT else f"{self.host} port {self.port}"
        return spec.label if spec.label in (self.host, actual) else f"{spec.label} ({actual})"

    def known_name(self) -> str:
        """The host's name as OpenSSH writes it in known_hosts: [host]:port for a port other than 22."""
        return self.key_host if self.port == DEFAULT_PORT else f"[{self.key_host}]:{self.port}"


class _KeyCheck(asyncssh.SSHClient):
    """asyncssh's client callbacks: it asks here about any host key known_hosts does not already trust.

    A host with no known_hosts entry is new: trusted only with accept-new (its key is written to
    known_hosts once the key exchange is through). A host with an entry and another key has changed: refused.
    """

    def __init__(self, known: asyncssh.SSHKnownHosts, accept_new: bool) -> None:
        self.known = known
        self.accept_new = accept_new
        self.presented: asyncssh.SSHKey | None = None
        self.changed = False
        self.accepted_new = False  # a new host trusted by accept-new whose key is not recorded yet
        self.lookup: tuple[str, str, int | None] = ("", "", None)

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Called only for a key known_hosts does not trust: new host (maybe accepted) or changed key (never)."""
        self.presented = key
        self.lookup = (host, addr, port if port != DEFAULT_PORT else None)
        host_keys, ca_keys, *_ = self.known.match(*self.lookup)
        self.changed = bool(host_keys or ca_keys)
        self.accepted_new = self.accept_new and not self.changed
        return self.accepted_new


async def open_connection(spec: HostSpec, options: SshOptions) -> asyncssh.SSHClientConnection:
    """Log in to `spec` in batch mode and return the connection, or raise an SshConnectError that says why not."""
    target = await _resolve(spec, options)
    known = _read_known_hosts(target.known_files)
    check = _KeyCheck(known, options.accept_new_host_key)
    try:
        conn = await asyncssh.connect(
            spec.host,
            port=spec.port if spec.port is not None else (),
            username=spec.user if spec.user is not None else (),
            config=target.config,
            known_hosts=known,
            client_factory=lambda: check,
            password_auth=False,
            kbdint_auth=False,
            passphrase=None,
            connect_timeout=options.connect_timeout_s,
            keepalive_interval=target.keepalive_s if target.keepalive_s is not None else (),
        )
    except asyncssh.PermissionDenied as exc:
        # The key exchange got through, so a host accepted as new is one we now know.
        _record_new_key(check, target)
        raise await _auth_refused(spec, target, options) from exc
    except asyncssh.HostKeyNotVerifiable as exc:
        raise _key_refused(spec, target, check, str(exc)) from exc
    except (TimeoutError, asyncio.TimeoutError) as exc:
        raise HostUnreachable(
            spec.label,
            f"Cannot reach {target.where(spec)}: no answer within {options.connect_timeout_s:g} s",
            "check that the machine is on and reachable from here (network, VPN, firewall), and the host name and port",
        ) from exc
    except socket.gaierror as exc:
        raise HostUnreachable(
            spec.label,
            f"Cannot reach {target.where(spec)}: the name {target.host!r} does not resolve ({exc.strerror})",
            f"check the spelling, or give it a Host {spec.host} block with its HostName in ~/.ssh/config",
        ) from exc
    except ConnectionRefusedError as exc:
        raise HostUnreachable(
            spec.label,
            f"Cannot reach {target.where(spec)}: the connection was refused (no SSH server listens on port "
            f"{target.port})",
            "check that the machine's SSH server runs (`ssh " + spec.target + "` from a terminal) and the port",
        ) from exc
    except OSError as exc:
        raise HostUnreachable(
            spec.label,
            f"Cannot reach {target.where(spec)}: {exc.strerror or exc}",
            "check that the machine is on and reachable from here, and the host name and port",
        ) from exc
    except asyncssh.Error as exc:
        raise SshConnectError(
            spec.label,
            f"SSH to {target.where(spec)} failed: {exc.reason}",
            "check that `ssh " + spec.target + "` logs in from a terminal without asking anything",
        ) from exc
    _record_new_key(check, target)
    return conn


async def _resolve(spec: HostSpec, options: SshOptions) -> _Target:
    """Read ssh_config for the host: where it points, as whom, and which known_hosts files apply."""
    config: list[str] | tuple[()] = [str(p) for p in options.config_paths] if options.config_paths else ()
    try:
        resolved = await asyncssh.SSHClientConnectionOptions.construct(
            config=config,
            host=spec.host,
            port=spec.port if spec.port is not None else (),
            username=spec.user if spec.user is not None else (),
            passphrase=None,
        )
    except (OSError, ValueError, asyncssh.Error) as exc:
        where = ", ".join(str(p) for p in options.config_paths) or "~/.ssh/config"
        raise SshConnectError(
            spec.label, f"Cannot read the SSH settings for {spec.label}: {exc}", f"check {where} and the key files"
        ) from exc
    if options.known_hosts is not None:
        known_files = [options.known_hosts]
    else:
        # UserKnownHostsFile from ssh_config, as ssh reads it; `none` there still checks (against ~/.ssh/known_hosts).
        configured = resolved.config.get("UserKnownHostsFile", None) or []
        known_files = [Path(os.path.expanduser(str(p))) for p in configured] or [options.known_hosts_path]
        known_files += [Path(os.path.expanduser(str(p))) for p in resolved.config.get("GlobalKnownHostsFile", [])]
    return _Target(
        host=str(resolved.host),
        key_host=str(resolved.host_key_alias or resolved.host),
        port=int(resolved.port),
        user=str(resolved.username),
        known_files=known_files,
        config=config,
        keepalive_s=options.keepalive_s if resolved.config.get("ServerAliveInterval", None) is None else None,
    )


def _read_known_hosts(files: list[Path]) -> asyncssh.SSHKnownHosts:
    """The known_hosts entries of the files that exist (none yet is an empty list, never "no checking")."""
    text = "\n".join(p.read_text(errors="replace") for p in files if p.is_file())
    return asyncssh.import_known_hosts(text)


def _record_new_key(check: _KeyCheck, target: _Target) -> None:
    """Append a host accepted as new to the first known_hosts file, in OpenSSH's format."""
    if not check.accepted_new or check.presented is None:
        return
    path = target.known_files[0]
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key_text = check.presented.export_public_key("openssh").decode().split()
    line = f"{target.known_name()} {key_text[0]} {key_text[1]}\n"
    existing = path.read_bytes() if path.is_file() else b""
    with path.open("a") as out:
        if existing and not existing.endswith(b"\n"):
            out.write("\n")
        out.write(line)
    check.accepted_new = False


def _key_refused(spec: HostSpec, target: _Target, check: _KeyCheck, reason: str) -> SshConnectError:
    """Why the host key was not trusted: a new host, a changed key, or a key known_hosts marks revoked."""
    where = target.where(spec)
    files = ", ".join(str(p) for p in target.known_files)
    if check.presented is None:
        # asyncssh refused before asking: a @revoked key, or a certificate it could not verify.
        return HostKeyChanged(
            spec.label,
            f"The host key of {where} is not trusted: {reason}",
            f"see the entries for {target.known_name()} in {files}; the planner will not connect to it as it is",
        )
    fingerprint = check.presented.get_fingerprint("sha256")
    kind = check.presented.get_algorithm()
    if not check.changed:
        return HostKeyUnknown(
            spec.label,
            f"{where} is not a known host (not in {files}); it presents the {kind} key {fingerprint}",
            f"check that fingerprint against the host's own (run `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on "
            f"it), then run again with {_ACCEPT_FLAG} to trust it and record it in known_hosts",
            fingerprint,
        )
    old = _known_lines(target, check)
    held = "; ".join(f"line {n} of {path} ({fp})" for path, n, fp in old) or files
    return HostKeyChanged(
        spec.label,
        f"The host key of {where} has CHANGED: it now presents the {kind} key {fingerprint}, but known_hosts "
        f"holds another for it ({held}). Someone may be intercepting the connection, or the host was reinstalled",
        f"if you know the host was reinstalled, remove the old key with "
        f"`ssh-keygen -R '{target.known_name()}' -f {old[0][0] if old else target.known_files[0]}` and connect "
        f"again with {_ACCEPT_FLAG}; {_ACCEPT_FLAG} alone never replaces a changed key",
    )


def _known_lines(target: _Target, check: _KeyCheck) -> list[tuple[Path, int, str]]:
    """Where known_hosts holds keys for this host: (file, line number, the key's fingerprint), asyncssh's matching."""
    found: list[tuple[Path, int, str]] = []
    for path in target.known_files:
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                host_keys, ca_keys, *_ = asyncssh.import_known_hosts(line).match(*check.lookup)
            except (ValueError, asyncssh.Error):
                continue
            for key in [*host_keys, *ca_keys]:
                entry = (path, number, key.get_fingerprint("sha256"))
                if entry not in found:  # a line naming both the host and its address matches twice
                    found.append(entry)
    return found


async def _auth_refused(spec: HostSpec, target: _Target, options: SshOptions) -> AuthRefused:
    """The login was refused: say whether the host takes keys at all, and how to get one accepted."""
    login = f"{target.user}@{spec.host}"
    try:
        # A second, short connection: the refusal itself does not say which methods the host offers.
        methods = await asyncio.wait_for(
            asyncssh.get_server_auth_methods(
                spec.host,
                port=spec.port if spec.port is not None else (),
                username=target.user,
                config=target.config,
            ),
            timeout=options.connect_timeout_s,
        )
    except (OSError, asyncssh.Error, TimeoutError, asyncio.TimeoutError):
        methods = []
    if methods and "publickey" not in methods:
        return AuthRefused(
            spec.label,
            f"{target.where(spec)} lets {target.user} in only with a password (it offers {', '.join(methods)}), "
            f"and the planner never types passwords (it runs in batch mode, with no prompts)",
            f"set up key login once: `ssh-keygen -t ed25519` if you have no key, then `ssh-copy-id {login}`",
        )
    return AuthRefused(
        spec.label,
        f"{target.where(spec)} refused every key offered for user {target.user} (from the agent and the key "
        f"files); the planner never asks for a password",
        f"copy your public key to it with `ssh-copy-id {login}`, name the right key with IdentityFile in "
        f"~/.ssh/config, or load it into the agent with `ssh-add`",
    )
