"""`planner fleet --status-lines`: the messages a fleet run prints for a client (the TUI's fleet view), one JSON
object per line, typed on both sides: tagged by `type` as the engine protocol's messages are (planner.engine.protocol).

A line is a host's new status (`type` "status") or the fleet's last word (`type` "done": the comparison and
how each host ended). `version` says which shape it is; a client reads what it knows and leaves other lines to
its log.
"""

from __future__ import annotations

from typing import Union

import msgspec

LINES_VERSION = 1
"""The shape of these lines; a change that a client of an older version would misread raises it."""


class FleetLine(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    """One line of `fleet --status-lines`; its class's tag is the line's `type`, and `version` its shape."""

    version: int = LINES_VERSION


class StatusLine(FleetLine, tag="status", frozen=True, kw_only=True):
    """One host's new status: where its plan is (`phase`) and what it is doing there."""

    label: str
    host: str = ""
    phase: str = ""
    detail: str = ""


class HostEnd(msgspec.Struct, frozen=True, kw_only=True):
    """How one host ended: its plan's status (None without results) or why it failed, and its report."""

    label: str
    host: str = ""
    failure: str = ""
    status: str | None = None
    report: str | None = None


class DoneLine(FleetLine, tag="done", frozen=True, kw_only=True):
    """The fleet's last line: the comparison report, whether it was cancelled, and every host's end."""

    report: str = ""
    interrupted: bool = False
    rows: tuple[HostEnd, ...] = ()

    def planned(self) -> bool:
        """Whether at least one host finished a plan."""
        return any(row.status is not None and not row.failure for row in self.rows)


FleetMessage = Union[StatusLine, DoneLine]

_DECODER = msgspec.json.Decoder(FleetMessage)


def encode(message: FleetMessage) -> str:
    """The message as one line of JSON (no newline)."""
    return msgspec.json.encode(message).decode()


def decode(line: str) -> FleetMessage | None:
    """The message on one line of the fleet's stdout; None for anything else (a library's stray print, a line of
    another type or shape)."""
    try:
        return _DECODER.decode(line)
    except msgspec.DecodeError:
        return None
