"""The report rendered from the fixture results.json matches the reviewed golden Markdown."""

from __future__ import annotations

import os

from report_fixtures import FIGURE_LINKS, FIXTURES

from planner.report import render_markdown
from planner.report.markdown import render_evidence

GOLDEN = FIXTURES / "expected_report.md"
GOLDEN_EVIDENCE = FIXTURES / "expected_evidence.md"


def test_report_matches_golden(fixture_results) -> None:
    """Set UPDATE_GOLDEN=1 to rewrite the golden file after a deliberate change, then review it."""
    for golden, render in ((GOLDEN, render_markdown), (GOLDEN_EVIDENCE, render_evidence)):
        text = render(fixture_results, figures=FIGURE_LINKS)
        if os.environ.get("UPDATE_GOLDEN") == "1":
            golden.write_text(text)
        assert golden.is_file(), f"no golden {golden.name} yet: run with UPDATE_GOLDEN=1 and review it"
        assert text == golden.read_text(), f"{golden.name} changed: review the diff, then re-run with UPDATE_GOLDEN=1"


def test_sections_in_order(fixture_results) -> None:
    text = render_markdown(fixture_results, figures=FIGURE_LINKS)
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["Summary", "The fastest candidates", "Roadmap", "Evidence"]
    evidence_md = render_evidence(fixture_results, figures=FIGURE_LINKS)
    evidence = [line[3:] for line in evidence_md.splitlines() if line.startswith("## ")]
    assert evidence == ["Requirements", "Hardware", "Baseline", "Bottlenecks", "Architecture findings",
                        "Checklist", "Decision path", "All candidates", "Environment", "Reproduce"]


def test_render_is_pure_and_deterministic(fixture_results, results) -> None:
    before = repr(results)
    first = render_markdown(results, figures=FIGURE_LINKS)
    assert render_markdown(results, figures=FIGURE_LINKS) == first
    assert repr(results) == before, "rendering must not modify the results"
