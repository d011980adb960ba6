"""The baseline: the model as PyTorch runs it out of the box (eager, fp32, default threads)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from planner.plugins import CandidateSpec, Description, ModelRef, PlanContext, Plugin, Precision, Target, cuda_usable
from planner.plugins.packaging import PackageFiles
from planner.pytorch.package import TorchSettings, torch_package
from targets import wording

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel


class TorchEagerPlugin(Plugin):
    """PyTorch eager mode with default settings: what every candidate is compared against."""

    name = "torch.eager"
    title = "PyTorch eager"
    target = Target.ANY
    summary = "PyTorch eager, fp32, default settings (the baseline)"
    requires = ("torch",)
    needs_torch_module = True
    runtime = "pytorch"
    is_baseline = True

    def spec(self, device: str) -> CandidateSpec:
        """The out-of-the-box configuration on a device ('cpu' or 'cuda')."""
        return CandidateSpec(plugin=self.name, label=f"torch eager fp32 ({device})", config={"device": device},
                             precision=Precision.FP32)

    def baseline_spec(self, model: "LoadedModel", hw: "HardwareProfile") -> CandidateSpec | None:
        """Torch eager on the GPU where torch reaches one, else on the CPU; None for a model without a module."""
        if not model.has_torch:
            return None
        return self.spec("cuda" if cuda_usable(hw) else "cpu")

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """The single baseline configuration on the planned device."""
        yield self.spec("cuda" if ctx.hw.gpus else "cpu")

    def describe(self, spec: CandidateSpec, inputs: object = None) -> Description:
        """'PyTorch eager FP32 on the CPU, default settings', and the plain torch call it is."""
        device = str(spec.config.get("device", "cpu"))
        where = "the GPU" if device == "cuda" else "the CPU"
        return Description(f"PyTorch eager {wording.precision(str(spec.precision))} on {where}, default settings",
                           wording.torch_code(device=device, precision=str(spec.precision)))

    def open(self, spec: CandidateSpec, model: ModelRef):
        """Rebuild the module and wrap it in a TorchSession."""
        from planner.pytorch.session import TorchSession

        loaded = model.load()
        return TorchSession(loaded.module, device=spec.config.get("device", "cpu"),
                            precision=str(spec.precision))

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The module as a torch.export archive, run by PyTorch eager with its default settings."""
        settings = TorchSettings(device=str(spec.config.get("device", "cpu")), precision=str(spec.precision))
        return torch_package(model.load().module, model.inputs, dest, settings, dynamic_batch=spec.dynamic_batch)
