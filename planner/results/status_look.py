"""How each candidate status looks, everywhere it is shown: its short word in a narrow table (the TUI), its
style on a terminal (the CLI's progress lines) and its colour in a figure (the report's plots)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.results.values import Status


@dataclass(frozen=True)
class StatusLook:
    """One status's short word, terminal style and figure colour."""

    short: str  # at most four letters: keeps the TUI's results table inside 80 columns
    style: str  # a Rich style
    colour: str  # a figure's colour (hex)


LOOKS: dict[str, StatusLook] = {
    Status.OK: StatusLook("ok", "green", "#2a9d8f"),
    Status.REJECTED: StatusLook("rej", "red", "#e9c46a"),
    Status.UNCONFIRMED: StatusLook("unc", "yellow", "#a8dadc"),
    Status.FAILED: StatusLook("fail", "red", "#e76f51"),
    Status.SKIPPED: StatusLook("skip", "dim", "#8d99ae"),
    Status.PARTIAL: StatusLook("part", "yellow", "#f4a261"),
}


def look(status: str) -> StatusLook:
    """How `status` looks; a status this version does not know gets its first four letters, no style, grey."""
    return LOOKS.get(str(status), StatusLook(str(status)[:4], "", "#555555"))
