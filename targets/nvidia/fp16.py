"""PyTorch eager on the GPU in half precision: fp16 (tensor cores), bf16 on Ampere+, channels_last."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from planner.plugins import (
    ActionId,
    Arithmetic,
    CandidateSpec,
    Description,
    ModelRef,
    Phase,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.plugins.packaging import PackageFiles
from planner.pytorch.package import TorchSettings, torch_package
from targets import wording
from targets.nvidia.common import CUDA_DEVICE, supports_bf16


class Fp16Plugin(Plugin):
    """The unchanged model cast to fp16 (and bf16 where the GPU has bf16 tensor cores)."""

    name = "nvidia.fp16"
    title = "PyTorch FP16 on the GPU"
    target = Target.NVIDIA
    actions = (ActionId.GPU_FP16,)
    arithmetic = Arithmetic.REDUCED_PRECISION
    runtime = "pytorch-cuda"
    phase = Phase.EXTRA_IMPACT
    summary = "PyTorch eager on CUDA in fp16 / bf16, NCHW and channels_last"
    requires = ("torch",)
    needs_torch_module = True
    needs_cuda = True

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """fp16, fp16 channels_last (4-D float image inputs only), and bf16 on compute capability >= 8.0."""
        yield fp16_spec(Precision.FP16, channels_last=False)
        if ctx.model.inputs.image_like:
            yield fp16_spec(Precision.FP16, channels_last=True)
        else:
            ctx.log("nvidia.fp16: no channels_last candidate: the model's first input is not a 4-D "
                    f"float image ({ctx.model.inputs.first.describe()})")
        if supports_bf16(ctx.hw):
            yield fp16_spec(Precision.BF16, channels_last=False)
        else:
            ctx.log("nvidia.fp16: no bf16 candidate: the GPU's compute capability is below 8.0 "
                    "(or unknown), so it has no bf16 tensor cores")

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'PyTorch FP16 on the GPU, channels-last', and the torch calls."""
        channels_last = bool(spec.config.get("channels_last", False))
        return Description(wording.title(f"PyTorch {wording.precision(str(spec.precision))} on the GPU",
                                         "channels-last" if channels_last else ""),
                           wording.torch_code(device=str(spec.config.get("device", CUDA_DEVICE)),
                                              precision=str(spec.precision), channels_last=channels_last))

    def open(self, spec: CandidateSpec, model: ModelRef) -> Any:
        """Rebuild the module on the GPU in the spec's precision and memory format."""
        from planner.pytorch.session import TorchSession

        return TorchSession(model.load().module, device=spec.config.get("device", CUDA_DEVICE),
                            precision=str(spec.precision),
                            channels_last=bool(spec.config.get("channels_last", False)))

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The module exported on the GPU in the spec's precision; run.py keeps its memory format."""
        settings = TorchSettings(device=str(spec.config.get("device", CUDA_DEVICE)), precision=str(spec.precision),
                                 channels_last=bool(spec.config.get("channels_last", False)))
        return torch_package(model.load().module, model.inputs, dest, settings, dynamic_batch=spec.dynamic_batch)


def fp16_spec(precision: Precision, *, channels_last: bool) -> CandidateSpec:
    """The spec of one half-precision eager configuration."""
    layout = " channels_last" if channels_last else ""
    notes = ["weights and float activations cast to "
             f"{precision} (integer inputs such as token ids stay integers); accumulation precision "
             "is the kernels' choice (usually fp32)"]
    if precision is Precision.FP16:
        notes.append("fp16 overflows above 65504: models with large activations may produce inf")
    if channels_last:
        notes.append("NHWC memory format: tensor-core convolutions avoid layout transposes")
    return CandidateSpec(plugin=Fp16Plugin.name, label=f"torch eager {precision}{layout} (cuda)",
                         config={"device": CUDA_DEVICE, "channels_last": channels_last},
                         precision=precision, notes=tuple(notes))
