"""Helpers for compact DataTables: one space between columns instead of Textual's two."""

from __future__ import annotations

from rich.text import Text


def cells(*values: str, right: tuple[int, ...] = ()) -> tuple[Text, ...]:
    """Cells for a table built with cell_padding=0: each starts with a space, numbers align right."""
    return tuple(Text(f" {value}", justify="right" if i in right else "left") for i, value in enumerate(values))
