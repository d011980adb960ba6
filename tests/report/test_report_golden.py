"""The report rendered from the fixture results.json matches the reviewed golden Markdown."""

from __future__ import annotations

import os

from report_fixtures import FIGURE_LINKS, FIXTURES

from planner.report import render_markdown

GOLDEN = FIXTURES / "expected_report.md"


def test_report_matches_golden(fixture_results) -> None:
    """Set UPDATE_GOLDEN=1 to rewrite the golden file after a deliberate change, then review it."""
    text = render_markdown(fixture_results, figures=FIGURE_LINKS)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert GOLDEN.is_file(), "no golden report yet: run with UPDATE_GOLDEN=1 and review it"
    expected = GOLDEN.read_text()
    assert text == expected, "the report changed: review the diff, then re-run with UPDATE_GOLDEN=1"


def test_sections_in_order(fixture_results) -> None:
    text = render_markdown(fixture_results, figures=FIGURE_LINKS)
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["Summary", "Roadmap", "Appendix"]
    appendix = text.split("\n## Appendix\n")[1]
    evidence = [line[4:] for line in appendix.splitlines() if line.startswith("### ")]
    assert evidence == ["Requirements", "Hardware", "Baseline", "Bottlenecks", "Architecture findings",
                        "Checklist", "Decision path", "All candidates", "Environment", "Reproduce"]


def test_render_is_pure_and_deterministic(fixture_results, results) -> None:
    before = repr(results)
    first = render_markdown(results, figures=FIGURE_LINKS)
    assert render_markdown(results, figures=FIGURE_LINKS) == first
    assert repr(results) == before, "rendering must not modify the results"
