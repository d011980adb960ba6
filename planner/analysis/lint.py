"""Architecture lint: hardware-unfriendly patterns found from module attributes and dataflow, ranked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from planner.analysis import exported
from planner.analysis.findings import SEVERITY_RANK, Finding, Severity
from planner.analysis.layers import LayerReport, analyze_layers
from planner.analysis.rules import RULES, LintContext
from planner.analysis.stats import as_args

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

__all__ = ["Finding", "Severity", "advice_target", "lint", "ranked"]


def advice_target(hw: "HardwareProfile | None", device: str = "cpu") -> str:
    """The target advice is written for: "edge" on a board, "nvidia" on a CUDA device, else "cpu"."""
    from planner.hardware.profile import EDGE_DEVICE_CLASSES

    if hw is not None and hw.device_class in EDGE_DEVICE_CLASSES:
        return "edge"
    return "nvidia" if str(device).startswith("cuda") else "cpu"


def lint(module: nn.Module, example_inputs: torch.Tensor | tuple[torch.Tensor, ...],
         report: LayerReport | None = None, *, target: str | None = None) -> list[Finding]:
    """Every finding for this model, most impact first (an untimed report is made when none is given).

    `example_inputs` is one tensor or the forward's positional tensors. Rules about images and
    feature maps stay silent for a model fed only integers (token ids); a torch.export graph's
    torch.nn layers are rebuilt from its arguments; TorchScript modules give no findings (no module
    objects to read, and their report's rows are ops). `target` ("cpu", "nvidia", "edge"; see
    `advice_target`) picks the advice where it differs by hardware.
    """
    args = as_args(example_inputs)
    if report is None:
        report = analyze_layers(module, args, measure_time=False)
    ctx = LintContext(module=module, example_inputs=args, report=report, stand_ins=exported.stand_in_modules(module),
                      target=target)
    return ranked([f for f in (rule(ctx) for rule in RULES) if f is not None])


def ranked(findings: list[Finding]) -> list[Finding]:
    """Findings most impact first, then most severe, then by id (a stable order for equal ones)."""
    return sorted(findings, key=lambda f: (-f.impact, SEVERITY_RANK[f.severity], f.id))
