"""Warnings from the run: everything the plan warned about while it ran, in full (the Summary names the first)."""

from __future__ import annotations

from planner.report.data import ReportData


def render(data: ReportData) -> list[str]:
    """The section; [] when the run recorded no warning."""
    warnings = [w for w in data.run.warnings if w]
    if not warnings:
        return []
    return ["## Warnings from the run", ""] + [f"- {w}" for w in warnings] + [""]
