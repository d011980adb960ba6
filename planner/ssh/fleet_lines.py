"""`planner fleet --status-lines`: the messages a fleet run prints for a client (the TUI's fleet view), one JSON
object per line, typed on both sides and written and read by the codec.

A line is a host's new status (`type` "status") or the fleet's last word (`type` "done": the comparison and
how each host ended). `version` says which shape it is; a client reads what it knows and leaves other lines to
its log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from planner.codec import SchemaError, from_data, to_data

LINES_VERSION = 1
"""The shape of these lines; a change that a client of an older version would misread raises it."""


@dataclass(frozen=True)
class StatusLine:
    """One host's new status: where its plan is (`phase`) and what it is doing there."""

    label: str
    host: str = ""
    phase: str = ""
    detail: str = ""
    type: str = "status"
    version: int = LINES_VERSION


@dataclass(frozen=True)
class HostEnd:
    """How one host ended: its plan's status (None without results) or why it failed, and its report."""

    label: str
    host: str = ""
    failure: str = ""
    status: str | None = None
    report: str | None = None


@dataclass(frozen=True)
class DoneLine:
    """The fleet's last line: the comparison report, whether it was cancelled, and every host's end."""

    report: str = ""
    interrupted: bool = False
    rows: tuple[HostEnd, ...] = ()
    type: str = "done"
    version: int = LINES_VERSION

    def planned(self) -> bool:
        """Whether at least one host finished a plan."""
        return any(row.status is not None and not row.failure for row in self.rows)


FleetMessage = StatusLine | DoneLine


def encode(message: FleetMessage) -> str:
    """The message as one line of JSON (no newline)."""
    return json.dumps(to_data(message), separators=(",", ":"))


def decode(line: str) -> FleetMessage | None:
    """The message on one line of the fleet's stdout; None for anything else (a library's stray print)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind = {"status": StatusLine, "done": DoneLine}.get(str(data.get("type")))
    if kind is None:
        return None
    try:
        return from_data(data, kind)
    except SchemaError:
        return None
