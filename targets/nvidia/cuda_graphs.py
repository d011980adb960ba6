"""CUDA graphs: record the whole fp16 forward pass once at a fixed shape, then replay it per call."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from planner.plugins import (
    CandidateSpec,
    ModelRef,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.plugins.torch_session import TorchSession
from targets.nvidia.common import CUDA_DEVICE

WARMUP_CALLS = 3


class CudaGraphsPlugin(Plugin):
    """The fp16 model captured into one CUDA graph at the measured batch size."""

    name = "nvidia.cuda_graphs"
    target = Target.NVIDIA
    summary = "PyTorch fp16 forward captured in a CUDA graph at a static shape (no launch overhead)"
    requires = ("torch",)
    needs_torch_module = True
    needs_cuda = True

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One fp16 capture at the model's own input shape."""
        shape = tuple(ctx.model.input_spec.shape)
        yield CandidateSpec(
            plugin=self.name, label=f"CUDA graph fp16 batch {shape[0]} (cuda)",
            config={"device": CUDA_DEVICE, "shape": list(shape)}, precision=Precision.FP16,
            dynamic_batch=False,
            notes=("captured once at the measured input shape: every call must use that exact "
                   "shape, so the batch sweep is skipped",
                   "replay re-runs the recorded kernels with no Python or launch overhead; "
                   "models with data-dependent control flow or host syncs cannot be captured"))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "CudaGraphSession":
        """Rebuild the module in fp16 on the GPU and capture it at the spec's shape."""
        loaded = model.load()
        shape = tuple(spec.config.get("shape", model.input_shape))
        return CudaGraphSession(loaded.module, precision=str(spec.precision),
                                sample=loaded.make_inputs(batch=shape[0], seed=3)[0])


class CudaGraphSession(TorchSession):
    """A TorchSession that replays one captured CUDA graph; inputs are copied into a static buffer."""

    def __init__(self, module: Any, *, precision: str, sample: np.ndarray) -> None:
        super().__init__(module, device=CUDA_DEVICE, precision=precision)
        torch = self._torch
        self.shape = tuple(sample.shape)
        self._static_in = super().prepare(sample).clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        # Capture needs lazily initialised kernels (cuDNN/cuBLAS handles, autotuning) to exist
        # already, and they must be created off the capturing stream.
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(WARMUP_CALLS):
                self.module(self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(self.graph):
            self._static_out = self.module(self._static_in)
        torch.cuda.synchronize()

    def prepare(self, array: np.ndarray) -> Any:
        """The input on the GPU in fp16; it must have the captured shape."""
        if tuple(array.shape) != self.shape:
            raise ValueError(f"this CUDA graph was captured for input shape {self.shape}; "
                             f"got {tuple(array.shape)} (a graph cannot change shape)")
        return super().prepare(array)

    def run(self, prepared: Any) -> Any:
        """Copy the input into the graph's buffer and replay; the output buffer is reused."""
        self._static_in.copy_(prepared)
        self.graph.replay()
        return self._static_out

    def info(self) -> dict:
        """The torch settings plus the captured shape."""
        return {**super().info(), "cuda_graph": True, "captured_shape": list(self.shape)}
