"""The one file reader the sysfs counters share; tests pass their own to play a non-root user."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

FileReader = Callable[[Path], str]
"""Reads one sysfs file's text; raises OSError (PermissionError when the caller may not read it)."""


def read_file(path: Path) -> str:
    """The file's text (sysfs values are short ASCII)."""
    return path.read_text(encoding="ascii", errors="replace")


def read_number(path: Path, reader: FileReader = read_file) -> int:
    """A sysfs file holding one integer; EnergyReadError-worthy problems raise OSError or ValueError."""
    return int(reader(path).strip())
