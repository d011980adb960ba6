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


@dataclass(frozen=True)
class Finding:
    """One architecture issue with the layers involved, the numbers, its impact and the advice."""

    id: str
    title: str
    severity: Severity
    layers: tuple[str, ...]
    evidence: dict = field(default_factory=dict)
    impact: float = 0.0
    impact_basis: str = ""
    advice: str = ""
