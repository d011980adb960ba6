"""Lint findings: what is wrong with an architecture, how much it matters, and what to do (the `Finding`
itself is a result: planner.results.analysis)."""

from __future__ import annotations

from planner.results.analysis import Finding, Severity

SEVERITY_RANK = {Severity.HIGH: 0, Severity.MEDIUM: 1, Severity.LOW: 2, Severity.INFO: 3}
"""Sort order of severities, most pressing first."""


def grade(impact: float, *, high: float, medium: float) -> Severity:
    """The severity of an impact given the thresholds for high and medium."""
    if impact >= high:
        return Severity.HIGH
    if impact >= medium:
        return Severity.MEDIUM
    return Severity.LOW


TARGETS = ("cpu", "nvidia", "edge")
"""The deployment targets advice can differ for (the plan's --target names)."""


def at_most(severity: Severity, cap: Severity) -> Severity:
    """The less pressing of two severities."""
    return severity if SEVERITY_RANK[severity] >= SEVERITY_RANK[cap] else cap


__all__ = ["SEVERITY_RANK", "TARGETS", "Finding", "Severity", "at_most", "grade"]
