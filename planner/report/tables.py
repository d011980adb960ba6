"""The report's run-specific tables (interaction, compression, device targets) on their own, for the TUI.

The TUI's Results step shows the same Markdown the report prints for these sections, so the two
never word a table differently; figures are left out (a terminal cannot show them).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from planner.report.data import ReportData
from planner.report.sections import compression, device_targets, interaction
from planner.results import PlanResults

EXTRA_TABLES = (interaction.render, compression.render, device_targets.render)
"""Sections that appear only when the run measured their data (an interaction pair, an edge plan)."""


def extra_tables_markdown(results: PlanResults | Mapping[str, Any]) -> str:
    """The interaction, compression and device-target sections as Markdown ('' when the run has none)."""
    data = ReportData(results, None, {})
    lines: list[str] = []
    for section in EXTRA_TABLES:
        lines += section(data)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
