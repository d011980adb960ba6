"""Which machine to reach and how: a host as the user wrote it (`HostSpec`) and the connection flags (`SshOptions`).

A host is written the way `ssh` takes it: an alias from ~/.ssh/config (`pi5`), a name or address
(`board.local`, `192.168.1.20`), optionally with a user and a port (`pi@board:2222`, `pi@[fe80::1]:2222`).
Nothing here opens a connection: planner.ssh.connect does that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from planner.errors import PlannerError


class HostSpecError(PlannerError):
    """A host written in a form ssh cannot take (empty, a bad port, a stray space)."""


_FORMS = "write an ssh_config alias (pi5), a host (board.local) or user@host[:port] (pi@192.168.1.20:2222)"
# Characters a host name, an address or an ssh_config alias never holds; catching them early keeps a typo
# from becoming a confusing DNS failure later.
_BAD_HOST_CHARS = re.compile(r"[\s@/\\'\"`$;|&<>(){}*?!]")
_UNSAFE_IN_FOLDER = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class HostSpec:
    """One machine to plan on, as the user named it.

    `host` is what ssh resolves: an ssh_config alias or a host name/IP (ssh_config's HostName, User and
    Port apply to it). `user` and `port` are the ones written in the text, None where ssh_config (or
    the defaults: the local user, port 22) decides. `label` names the host in reports and in the local
    out folder; `planner` is the command that starts the planner on the remote.
    """

    host: str
    user: str | None = None
    port: int | None = None
    label: str = ""
    planner: str = "planner"

    def __post_init__(self) -> None:
        if not self.label:
            # Frozen: the default label is the text the user would have written for this host.
            object.__setattr__(self, "label", self.target)

    @classmethod
    def parse(cls, text: str, *, label: str | None = None, planner: str = "planner") -> HostSpec:
        """Read "alias", "host", "user@host", "host:port" or "user@host:port" ("[v6addr]:port" for IPv6)."""
        written = text.strip()
        if not written:
            raise HostSpecError("No host given", _FORMS)
        user: str | None = None
        rest = written
        if "@" in rest:
            user, rest = rest.rsplit("@", 1)
            if not user or _BAD_HOST_CHARS.search(user):
                raise HostSpecError(f"Host {written!r} has no usable user name before '@'", _FORMS)
        port: int | None = None
        if rest.startswith("["):
            # IPv6 in brackets, the only form where a colon is part of the address.
            end = rest.find("]")
            if end < 0:
                raise HostSpecError(f"Host {written!r} opens '[' but never closes it", _FORMS)
            host, tail = rest[1:end], rest[end + 1 :]
            if tail:
                if not tail.startswith(":"):
                    raise HostSpecError(f"Host {written!r} has {tail!r} after the address", _FORMS)
                port = _port(tail[1:], written)
        elif rest.count(":") == 1:
            host, port_text = rest.split(":")
            port = _port(port_text, written)
        else:
            # No colon, or several: a bare IPv6 address (no port can follow it unbracketed).
            host = rest
        if not host or _BAD_HOST_CHARS.search(host):
            raise HostSpecError(f"Host {written!r} is not a host name, address or ssh_config alias", _FORMS)
        return cls(host=host, user=user, port=port, label=(label or "").strip() or written, planner=planner)

    @property
    def target(self) -> str:
        """The host in ssh's own words: user@host:port, with only the parts that were given."""
        host = f"[{self.host}]" if ":" in self.host and self.port is not None else self.host
        text = f"{self.user}@{host}" if self.user else host
        return f"{text}:{self.port}" if self.port is not None else text

    @property
    def folder_name(self) -> str:
        """The label as one safe folder name: letters, digits, '.', '_' and '-', never starting with '.' or '-'."""
        # Trimming '-' too keeps the name from reading as an option to a command that is handed it.
        name = _UNSAFE_IN_FOLDER.sub("_", self.label).strip("._-")
        return name or "host"

    def __str__(self) -> str:
        return self.label


def _port(text: str, written: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise HostSpecError(f"Host {written!r} has port {text!r}", "a port is a number from 1 to 65535; " + _FORMS)
    return int(text)


@dataclass(frozen=True)
class SshOptions:
    """How to connect, from the command line's flags.

    `accept_new_host_key` trusts a host seen for the first time and records its key in known_hosts
    (a changed key is refused all the same). `config_paths` are ssh_config files to read instead of
    ~/.ssh/config (tests give their own); `known_hosts` is the known_hosts file, ~/.ssh/known_hosts
    when None. `connect_timeout_s` bounds reaching the host and logging in. `keepalive_s` is how often an
    idle connection checks the host still answers (three unanswered checks close it, so a network that went
    silent is noticed); ssh_config's ServerAliveInterval wins where it is set, and 0 turns the checks off.
    """

    accept_new_host_key: bool = False
    config_paths: tuple[Path, ...] = ()
    known_hosts: Path | None = None
    connect_timeout_s: float = 15.0
    keepalive_s: float = 15.0

    @property
    def known_hosts_path(self) -> Path:
        """The known_hosts file these options check host keys against."""
        return self.known_hosts if self.known_hosts is not None else Path.home() / ".ssh" / "known_hosts"
