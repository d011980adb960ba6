"""Report tables in a terminal pane: whole where they fit, one entry per row where not; nothing cut."""

from __future__ import annotations

import io

from rich.console import Console

from planner.tui.widgets.markdown_tables import markdown_with_tables

MD = """## Compression

Intro with **bold**.

| Candidate | Bits/param | Cosine |
|---|---|---|
| onnxruntime int8 dynamic (cpu, 2t) | 8 | 0.99987 |
| onnxruntime int8 static QDQ (cpu, 2t) | 8 | 0.99991 |
"""


def _render(width: int) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(markdown_with_tables(MD))
    return console.export_text()


def test_a_table_that_fits_is_drawn_as_a_table() -> None:
    text = _render(100)
    assert "Candidate" in text and "Bits/param" in text and "…" not in text
    assert any("onnxruntime int8 static QDQ (cpu, 2t)" in line and "0.99991" in line for line in text.splitlines())


def test_a_table_too_wide_becomes_entries_that_keep_every_value() -> None:
    text = _render(40)
    flat = " ".join(text.split())
    assert "…" not in text
    assert "onnxruntime int8 dynamic (cpu, 2t): Bits/param 8 · Cosine 0.99987" in flat
    assert "onnxruntime int8 static QDQ (cpu, 2t): Bits/param 8 · Cosine 0.99991" in flat
    assert "Intro with bold." in flat
