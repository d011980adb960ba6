"""The run-specific tables on their own (for the TUI): the report's words, and nothing when the run has none."""

from __future__ import annotations

from report_fixtures import full_report
from test_report_interaction import _pair

from planner.report.tables import extra_tables_markdown


def test_no_interaction_or_edge_data_gives_no_tables(results: dict) -> None:
    assert extra_tables_markdown(results) == ""


def test_the_interaction_table_reads_as_in_the_report(results: dict) -> None:
    results["interactions"] = [_pair(redesign=False)]
    tables = extra_tables_markdown(results)
    assert tables.startswith("## Interaction of architecture and hardware")
    assert "| align channels to 8 (exact) | 50 ms (4x) | 20 ms (10x) |" in tables
    assert "**1.25**: amplify" in tables
    section = [line for line in tables.splitlines() if line.startswith("|")]
    assert all(line in full_report(results) for line in section)
