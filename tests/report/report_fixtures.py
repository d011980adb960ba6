"""Paths and constants shared by the report tests."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
"""The hand-written results.json and the golden report."""

FIGURE_LINKS = {"latency": "figures/latency.png", "throughput": "figures/throughput.png",
                "roofline": "figures/roofline.png", "candidates": "figures/candidates.png"}
"""Figure links as render_report_files writes them, fixed so the golden file is stable."""
