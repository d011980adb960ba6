"""Small file helpers shared by the probes: every read goes through a root so tests can use fake trees."""

from __future__ import annotations

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


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is missing or unreadable (probes treat both as 'unknown')."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
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
