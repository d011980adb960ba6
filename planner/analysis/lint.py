"""Architecture lint: hardware-unfriendly patterns found from module attributes and dataflow, ranked."""

from __future__ import annotations

import torch
from torch import nn

from planner.analysis.findings import SEVERITY_RANK, Finding, Severity
from planner.analysis.layers import LayerReport, analyze_layers
from planner.analysis.rules import RULES, LintContext

__all__ = ["Finding", "Severity", "lint"]


def lint(module: nn.Module, example_input: torch.Tensor, report: LayerReport | None = None) -> list[Finding]:
    """Every finding for this model, most impact first (an untimed report is made when none is given)."""
    if report is None:
        report = analyze_layers(module, example_input, measure_time=False)
    ctx = LintContext(module=module, example_input=example_input, report=report)
    findings = [f for f in (rule(ctx) for rule in RULES) if f is not None]
    return sorted(findings, key=lambda f: (-f.impact, SEVERITY_RANK[f.severity], f.id))
