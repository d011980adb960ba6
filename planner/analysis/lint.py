"""Architecture lint: hardware-unfriendly patterns found from module attributes and dataflow, ranked."""

from __future__ import annotations

import torch
from torch import nn

from planner.analysis import exported
from planner.analysis.findings import SEVERITY_RANK, Finding, Severity
from planner.analysis.layers import LayerReport, analyze_layers
from planner.analysis.rules import RULES, LintContext
from planner.analysis.stats import as_args

__all__ = ["Finding", "Severity", "lint"]


def lint(module: nn.Module, example_inputs: torch.Tensor | tuple[torch.Tensor, ...],
         report: LayerReport | None = None) -> list[Finding]:
    """Every finding for this model, most impact first (an untimed report is made when none is given).

    `example_inputs` is one tensor or the forward's positional tensors. Rules about images and
    feature maps stay silent for a model fed only integers (token ids); a torch.export graph's
    torch.nn layers are rebuilt from its arguments; TorchScript modules give no findings (no module
    objects to read, and their report's rows are ops).
    """
    args = as_args(example_inputs)
    if report is None:
        report = analyze_layers(module, args, measure_time=False)
    ctx = LintContext(module=module, example_inputs=args, report=report, stand_ins=exported.stand_in_modules(module))
    findings = [f for f in (rule(ctx) for rule in RULES) if f is not None]
    return sorted(findings, key=lambda f: (-f.impact, SEVERITY_RANK[f.severity], f.id))
