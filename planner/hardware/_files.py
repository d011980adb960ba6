"""Small file helpers shared by the probes: every read goes through a root so tests can use fake trees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

REAL_ROOT = Path("/")


def at(root: Path, absolute: str) -> Path:
    """The path `absolute` (e.g. '/proc/cpuinfo') inside `root`."""
    return root / absolute.lstrip("/")


def is_real_root(root: Path) -> bool:
    """True when probing the running machine rather than a fixture tree."""
    try:
        return root.resolve() == REAL_ROOT
    except OSError:
        return False


FileReader = Callable[[Path], str]
"""Reads one sysfs file's text; raises OSError (PermissionError when the caller may not read it)."""


def read_file(path: Path) -> str:
    """The file's text; raises OSError. For a reader that must say why it could not read (the energy counters tell
    a missing counter from one only root may read); a probe that only needs 'unknown' uses read_text."""
    return path.read_text(encoding="utf-8", errors="replace")


def read_number(path: Path, reader: FileReader = read_file) -> int:
    """A sysfs file holding one integer; raises OSError or ValueError (the energy counters report which)."""
    return int(reader(path).strip())


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is missing or unreadable (probes treat both as 'unknown')."""
    try:
        return read_file(path)
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    """The file's content as one integer, or None when missing, unreadable or not an integer."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None
