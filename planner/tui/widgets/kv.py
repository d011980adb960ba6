"""KeyValues: a two-column table of labelled values that wraps long values instead of cutting them."""

from __future__ import annotations

from typing import Iterable

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

Row = tuple[str, "str | Text | None"]


class KeyValues(Static):
    """Rows of (label, value); a row whose value is None is a section heading."""

    DEFAULT_CSS = """
    KeyValues { height: auto; }
    """

    def __init__(self, rows: Iterable[Row] = (), *, label_width: int = 14, id: str | None = None,
                 classes: str | None = None) -> None:
        self._label_width = label_width
        super().__init__(self._table(list(rows)), id=id, classes=classes)

    def set_rows(self, rows: Iterable[Row]) -> None:
        """Replace the rows."""
        self.update(self._table(list(rows)))

    def _table(self, rows: list[Row]) -> Table:
        self.rows = rows  # what is shown, as (label, value), readable without rendering
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(style="bold", width=self._label_width, no_wrap=True)
        table.add_column(ratio=1, overflow="fold")
        for label, value in rows:
            if value is None:
                table.add_row(Text(label, style="bold underline"), "")
            else:
                # Plain text, never console markup: values such as "[batch=1, 64]" or "[0, 1000)" are data.
                table.add_row(Text(label), Text(value) if isinstance(value, str) else value)
        return table
