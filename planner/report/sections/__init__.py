"""The report's sections, one module each: the decision (Summary and Roadmap) first, then the evidence, which
the report prints under one Appendix heading."""

from __future__ import annotations

from typing import Callable

from planner.report.data import ReportData
from planner.report.sections import (
    baseline,
    bottlenecks,
    budget,
    candidates,
    checklist,
    compression,
    decision,
    device_targets,
    environment,
    findings,
    hardware,
    interaction,
    predictions,
    reproduce,
    requirements,
    roadmap,
    run_warnings,
    shortlist,
    summary,
)

Section = Callable[[ReportData], list[str]]
"""A section renders its own heading (at level 2) and body as Markdown lines."""

DECISION: tuple[Section, ...] = (summary.render, shortlist.render, roadmap.render)
"""What to do: the Summary (one screen), the shortlist of the fastest and the Roadmap: report.md."""

APPENDIX: tuple[Section, ...] = (
    requirements.render, hardware.render, baseline.render, bottlenecks.render, findings.render,
    checklist.render, decision.render, candidates.render, interaction.render, compression.render,
    device_targets.render, predictions.render, budget.render, run_warnings.render,
    environment.render, reproduce.render,
)
"""The evidence, in report order: evidence.md, which report.md links to section by section."""

SECTIONS: tuple[Section, ...] = DECISION + APPENDIX
"""Every section in report order."""
