"""Fixed larger batches on the GPU: the same fp32 eager model, fed 8 or 32 samples per call.

The worker already sweeps batch sizes for every dynamic-batch candidate; this plugin makes a
serving batch a candidate of its own, so its per-call latency sits in the table beside the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from planner.plugins import (
    ActionId,
    CandidateSpec,
    Description,
    ModelRef,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.pytorch.session import TorchSession
from targets import wording
from targets.nvidia.common import CUDA_DEVICE

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel

BATCHES = (8, 32)


class BatchingPlugin(Plugin):
    """Torch eager fp32 on CUDA at fixed batch sizes 8 and 32 (latency per batch, not per sample)."""

    name = "nvidia.batching"
    title = "PyTorch larger batches on the GPU"
    target = Target.NVIDIA
    actions = (ActionId.GPU_BATCH,)
    runtime = "pytorch-cuda"
    summary = "PyTorch eager fp32 on CUDA at fixed batches of 8 and 32 samples per call"
    requires = ("torch",)
    needs_torch_module = True
    needs_cuda = True

    def check(self, hw: HardwareProfile, model: LoadedModel) -> list[str]:
        """The base reasons, plus a model whose batch axis may not grow."""
        reasons = super().check(hw, model)
        if not model.inputs.dynamic_batch:
            reasons.append("the model's batch size is fixed: it cannot take larger batches "
                           f"({model.inputs.describe()})")
        return reasons

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One spec per batch size above the model's own."""
        own = ctx.model.inputs.batch
        for batch in BATCHES:
            if batch > own:
                yield batch_spec(batch)
            else:
                ctx.log(f"nvidia.batching: batch {batch} skipped: the model already runs at {own}")

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'PyTorch FP32 on the GPU, 8 samples per call', and the call with a batch of that size."""
        batch = int(spec.config["batch"])
        code = wording.torch_code(device=str(spec.config.get("device", CUDA_DEVICE)), precision=str(spec.precision))
        return Description(f"PyTorch {wording.precision(str(spec.precision))} on the GPU, {batch} samples per call",
                           code + f"  # x: {batch} samples stacked on dimension 0")

    def open(self, spec: CandidateSpec, model: ModelRef) -> "FixedBatchSession":
        """Rebuild the module on the GPU, feeding `config['batch']` samples per call."""
        return FixedBatchSession(model.load().module, batch=int(spec.config["batch"]),
                                 precision=str(spec.precision),
                                 device=spec.config.get("device", CUDA_DEVICE))


def feed_rows(feed: Mapping[str, np.ndarray]) -> int:
    """The feed's batch: dimension 0, which every input must agree on (they are padded together)."""
    sizes = {name: a.shape[0] for name, a in feed.items() if a.ndim}
    if not sizes:
        raise ValueError("the feed has no input with a batch dimension to pad")
    if len(set(sizes.values())) > 1:
        raise ValueError("the inputs disagree on the batch size ("
                         + ", ".join(f"{n}: {b}" for n, b in sizes.items()) + "); they are padded together")
    return next(iter(sizes.values()))


def tile_feed(feed: Mapping[str, np.ndarray], batch: int) -> dict[str, np.ndarray]:
    """Every input's rows repeated cyclically to `batch` (the originals first); scalars as they are."""
    out = {}
    for name, array in feed.items():
        if array.ndim:
            array = np.take(array, np.arange(batch) % array.shape[0], axis=0)
        out[name] = array
    return out


def batch_spec(batch: int) -> CandidateSpec:
    """The spec of one fixed-batch configuration."""
    return CandidateSpec(
        plugin=BatchingPlugin.name, label=f"torch eager fp32 batch {batch} (cuda)",
        config={"device": CUDA_DEVICE, "batch": batch}, precision=Precision.FP32,
        dynamic_batch=False, rows_per_call=batch,
        notes=(f"latency is per call of {batch} samples: divide by {batch} for per-sample "
               f"latency; throughput counts all {batch} rows of each call, while the speedup "
               "column compares per call, so it understates the throughput gain",
               f"inputs are the measured samples repeated to fill {batch} rows; fidelity uses "
               "the rows of the original samples"))


class FixedBatchSession(TorchSession):
    """A TorchSession that tiles every input to a fixed batch and returns the original rows' outputs."""

    def __init__(self, module: Any, *, batch: int, precision: str = "fp32",
                 device: str = CUDA_DEVICE) -> None:
        super().__init__(module, device=device, precision=precision)
        self.batch = batch
        self._rows = batch

    def prepare(self, feed: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Repeat every input's samples cyclically to `batch` rows (the originals first), then move to the GPU."""
        rows = feed_rows(feed)
        if rows > self.batch:
            raise ValueError(f"an input of {rows} samples does not fit a fixed batch of {self.batch}")
        # The worker prepares, runs and converts one fidelity input at a time, so remembering the
        # last input's size is enough to cut its rows back out.
        self._rows = rows
        return super().prepare(tile_feed(feed, self.batch))

    def to_numpy(self, output: Any) -> np.ndarray:
        """The outputs of the last prepared input's own samples, so fidelity compares like with like."""
        return super().to_numpy(output)[: self._rows]

    def info(self) -> dict:
        """The torch settings plus the batch actually fed."""
        return {**super().info(), "batch_per_call": self.batch,
                "latency_basis": f"per call of {self.batch} samples"}
