"""Helpers for fake root trees: where the checked-in fixtures live and how to add a file to a copy."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hardware"


def write(root: Path, absolute: str, text: str) -> Path:
    """Write `text` at `absolute` (e.g. '/proc/cpuinfo') inside `root`, creating folders."""
    path = root / absolute.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
