"""Report Markdown for a terminal pane: prose through Rich's Markdown, each table whole or as a list.

Rich's own Markdown tables cut a cell that does not fit with an ellipsis, so on an 80-column
screen two candidates (or two cosines, 1.000…) could read alike. Here a table that fits the pane
is drawn as a table; one that does not becomes one entry per row ("name: header value · ..."),
which wraps at any width and cuts nothing.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

_GAP = 2  # columns between table cells


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("**", "") for cell in line.strip().strip("|").split("|")]


class FitTable:
    """A Markdown pipe table drawn as a table where it fits, else as one wrapped entry per row."""

    def __init__(self, lines: list[str]) -> None:
        self.header = _cells(lines[0])
        self.rows = [_cells(line) for line in lines[2:]]

    def natural_width(self) -> int:
        """The width the table needs with no cell wrapped."""
        widths = [max(len(row[i]) if i < len(row) else 0 for row in [self.header, *self.rows])
                  for i in range(len(self.header))]
        return sum(widths) + _GAP * (len(widths) - 1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table when it fits `options.max_width`, else the list."""
        if self.natural_width() <= options.max_width:
            table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, _GAP // 2))
            for name in self.header:
                table.add_column(name, no_wrap=True)
            for row in self.rows:
                table.add_row(*row)
            yield table
            return
        for row in self.rows:
            entry = Text(row[0] or self.header[0], style="bold")
            pairs = [f"{name or self.header[0]} {value}" for name, value in zip(self.header[1:], row[1:])]
            entry.append(": " + " · ".join(pairs) if pairs else "")
            yield entry


def markdown_with_tables(markdown: str) -> RenderableType:
    """The Markdown as one renderable: each pipe table a FitTable, the rest Rich Markdown."""
    parts: list[RenderableType] = []
    prose: list[str] = []
    table: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            if not table and "".join(prose).strip():
                parts += [Markdown("\n".join(prose)), Text("")]
                prose = []
            table.append(line)
            continue
        if table:
            parts += [FitTable(table) if len(table) >= 2 else Text("\n".join(table)), Text("")]
            table = []
        prose.append(line)
    if "".join(prose).strip():
        parts.append(Markdown("\n".join(prose)))
    return Group(*parts)
