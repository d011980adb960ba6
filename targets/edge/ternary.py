"""Ternary weights: every Conv/Linear weight becomes -a, 0 or +a per output channel.

Per output channel, weights with |w| <= 0.7 * mean|w| become 0 and the rest +-a, where a is the
mean |w| of the kept ones. No retraining is done, so accuracy usually drops a lot: the fidelity
gate measures it honestly. The session computes in fp32 with ternary values; the 2-bit size is an
estimate of a packed file, not a file that was written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from planner.hardware.profile import EDGE_DEVICE_CLASSES
from planner.plugins import (
    CandidateSpec,
    ModelRef,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.plugins.torch_session import TorchSession

THRESHOLD_FACTOR = 0.7
BITS_PER_WEIGHT = 2


@dataclass(frozen=True)
class TernaryStats:
    """What ternarization did to a module, and the size it would have packed at 2 bits per weight."""

    layers: int
    ternary_weights: int
    zero_weights: int
    channels: int
    other_values: int  # parameters and float buffers left in fp32 (biases, norms)

    @property
    def zero_fraction(self) -> float:
        """The share of ternary weights that are 0."""
        return self.zero_weights / self.ternary_weights if self.ternary_weights else 0.0

    @property
    def packed_bytes_estimate(self) -> int:
        """2 bits per ternary weight, one fp32 scale per channel, everything else fp32."""
        return (math.ceil(self.ternary_weights * BITS_PER_WEIGHT / 8) + 4 * self.channels
                + 4 * self.other_values)

    @property
    def fp32_bytes(self) -> int:
        """The same values all stored as fp32."""
        return 4 * (self.ternary_weights + self.other_values)

    def to_info(self) -> dict:
        """A JSON-ready dict with the size estimate labelled as one."""
        return {"ternary_layers": self.layers, "ternary_weights": self.ternary_weights,
                "zero_fraction": round(self.zero_fraction, 4), "fp32_bytes": self.fp32_bytes,
                "estimated_packed_bytes": self.packed_bytes_estimate,
                "estimated_packed_bytes_basis": "estimate, not a written file: 2 bits per "
                "ternary weight + one fp32 scale per output channel + other values in fp32"}


def ternarize_weight(weight: Any, factor: float = THRESHOLD_FACTOR) -> tuple[Any, Any]:
    """(ternary weight, per-output-channel alpha): values in {-alpha, 0, +alpha} along dim 0."""
    import torch

    flat = weight.detach().reshape(weight.shape[0], -1)
    magnitude = flat.abs()
    threshold = factor * magnitude.mean(dim=1, keepdim=True)
    keep = magnitude > threshold
    kept = keep.sum(dim=1, keepdim=True)
    # An all-zero channel keeps nothing; clamp avoids 0/0 and leaves its alpha at 0.
    alpha = (magnitude * keep).sum(dim=1, keepdim=True) / kept.clamp(min=1)
    ternary = torch.sign(flat) * keep * alpha
    return ternary.reshape(weight.shape).to(weight.dtype), alpha.squeeze(1)


def ternarize_module(module: Any, *, factor: float = THRESHOLD_FACTOR,
                     apply: bool = True) -> TernaryStats:
    """Ternarize every Conv1d/2d/3d and Linear weight (in place when `apply`); count what changed."""
    import torch
    from torch import nn

    layers = ternary = zeros = channels = 0
    replaced: set[int] = set()
    with torch.no_grad():
        for sub in module.modules():
            if not isinstance(sub, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)):
                continue
            if id(sub.weight) in replaced:  # a tied weight is stored (and counted) once
                continue
            values, _ = ternarize_weight(sub.weight, factor)
            layers += 1
            ternary += values.numel()
            zeros += int((values == 0).sum())
            channels += values.shape[0]
            replaced.add(id(sub.weight))
            if apply:
                sub.weight.copy_(values)
    other = sum(p.numel() for p in module.parameters() if id(p) not in replaced)
    other += sum(b.numel() for b in module.buffers() if b.is_floating_point())
    return TernaryStats(layers=layers, ternary_weights=ternary, zero_weights=zeros,
                        channels=channels, other_values=other)


class TernaryPlugin(Plugin):
    """Ternary Conv/Linear weights without retraining, run in torch fp32 on the CPU."""

    name = "edge.ternary"
    target = Target.EDGE
    summary = "ternary weights {-a, 0, +a} per output channel (no retraining), size if packed at 2 bits"
    requires = ("torch",)
    needs_torch_module = True  # its weights are rewritten in place

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One candidate, except in quick runs on machines that are not edge boards."""
        if ctx.quick and str(ctx.hw.device_class) not in EDGE_DEVICE_CLASSES:
            ctx.log("edge.ternary: skipped in quick runs off edge boards (ternary weights without "
                    "retraining rarely pass the fidelity gate)")
            return
        stats = ternarize_module(ctx.model.module, apply=False)
        if not stats.layers:
            ctx.log("edge.ternary: no Conv or Linear layers to ternarize")
            return
        threads = max(1, int(ctx.hw.cpu.usable_cores))
        yield CandidateSpec(
            plugin=self.name, label=f"ternary weights, fp32 compute (cpu, {threads}t)",
            config={"device": "cpu", "threshold_factor": THRESHOLD_FACTOR},
            precision=Precision.TERNARY, threads=threads,
            notes=("no retraining: ternary weights need quantization-aware training to keep "
                   "accuracy; the fidelity gate shows what is lost without it",
                   "runs in fp32 with ternary values: the timings are fp32's, not a 2-bit kernel's",
                   f"{stats.layers} layers, {stats.zero_fraction:.0%} of their weights are 0",
                   f"estimated packed size {stats.packed_bytes_estimate:,} bytes vs "
                   f"{stats.fp32_bytes:,} fp32 (estimate: 2 bits/weight + fp32 scales and "
                   "other values; no packed file is written)"))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "TernarySession":
        """Rebuild the module, ternarize it, and run it in fp32 on the spec's device."""
        return TernarySession(model.load().module, device=spec.config.get("device", "cpu"),
                              factor=float(spec.config.get("threshold_factor", THRESHOLD_FACTOR)),
                              threads=spec.threads)


class TernarySession(TorchSession):
    """A TorchSession over the ternarized module (fp32 compute), reporting the 2-bit size estimate."""

    def __init__(self, module: Any, *, device: str = "cpu", factor: float = THRESHOLD_FACTOR,
                 threads: int | None = None) -> None:
        self.stats = ternarize_module(module, factor=factor)
        super().__init__(module, device=device, precision="fp32", threads=threads)

    def info(self) -> dict:
        """The torch settings, the effective precision, and the labelled size estimate."""
        return {**super().info(), "precision": "ternary weights, fp32 compute",
                **self.stats.to_info()}
