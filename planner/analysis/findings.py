"""Lint findings: what is wrong with an architecture, how much it matters, and what to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    """How much a finding is worth acting on."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


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


@dataclass(frozen=True)
class Finding:
    """One issue with the layers involved, the numbers, its impact and the advice.

    `advice` is for the hardware the profile ran on; `advice_by_target` holds the advice for each
    target where it differs (a plan for another target picks its own). `category` is
    "architecture" for changes that need retraining, "runtime" for what a runtime or its settings fix.
    """

    id: str
    title: str
    severity: Severity
    layers: tuple[str, ...]
    evidence: dict = field(default_factory=dict)
    impact: float = 0.0
    impact_basis: str = ""
    advice: str = ""
    advice_by_target: dict = field(default_factory=dict)
    category: str = "architecture"


def at_most(severity: Severity, cap: Severity) -> Severity:
    """The less pressing of two severities."""
    return severity if SEVERITY_RANK[severity] >= SEVERITY_RANK[cap] else cap
