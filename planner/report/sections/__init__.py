"""The report's sections, one module each, in the order the report prints them."""

from __future__ import annotations

from typing import Callable

from planner.report.data import ReportData
from planner.report.sections import (
    baseline,
    bottlenecks,
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
    summary,
)

Section = Callable[[ReportData], list[str]]
"""A section renders its own heading and body as Markdown lines."""

SECTIONS: tuple[Section, ...] = (
    summary.render, hardware.render, baseline.render, bottlenecks.render, findings.render,
    checklist.render, decision.render, candidates.render, interaction.render, compression.render, device_targets.render,
    predictions.render, requirements.render, roadmap.render,
    environment.render, reproduce.render,
)
"""Every section in report order."""
