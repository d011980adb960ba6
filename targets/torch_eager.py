"""The baseline: the model as PyTorch runs it out of the box (eager, fp32, default threads)."""

from __future__ import annotations

from typing import Iterable

from planner.pipeline.baseline import TORCH_BASELINE_PLUGIN
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Plugin, Target


class TorchEagerPlugin(Plugin):
    """PyTorch eager mode with default settings: what every candidate is compared against."""

    name = TORCH_BASELINE_PLUGIN
    target = Target.ANY
    summary = "PyTorch eager, fp32, default settings (the baseline)"
    requires = ("torch",)
    needs_torch_module = True

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """The single baseline configuration on the planned device."""
        from planner.pipeline.baseline import torch_baseline_spec

        yield torch_baseline_spec(device="cuda" if ctx.hw.gpus else "cpu")

    def open(self, spec: CandidateSpec, model: ModelRef):
        """Rebuild the module and wrap it in a TorchSession."""
        from planner.plugins.torch_session import TorchSession

        loaded = model.load()
        return TorchSession(loaded.module, device=spec.config.get("device", "cpu"),
                            precision=str(spec.precision))
