"""CUDA graphs: record the whole fp16 forward pass once at a fixed shape, then replay it per call."""

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
    from planner.models.loaded import Feed
    from planner.models.spec import ModelInputs

WARMUP_CALLS = 3


class CudaGraphsPlugin(Plugin):
    """The fp16 model captured into one CUDA graph at the measured batch size."""

    name = "nvidia.cuda_graphs"
    title = "CUDA graphs"
    target = Target.NVIDIA
    actions = (ActionId.GPU_GRAPHS,)
    runtime = "cuda-graphs"
    summary = "PyTorch fp16 forward captured in a CUDA graph at a static shape (no launch overhead)"
    requires = ("torch",)
    needs_torch_module = True
    needs_cuda = True


    def prediction_family(self, spec: CandidateSpec) -> str:
        """The CUDA-graphs family (launch overhead removed), unless the precision decides."""
        family = super().prediction_family(spec)
        return "cuda-graphs" if family == "runtime" else family

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One fp16 capture at the model's own input shapes (every input's)."""
        inputs = ctx.model.inputs
        shapes = {t.name: list(t.shape) for t in inputs.tensors}
        yield CandidateSpec(
            plugin=self.name, label=f"CUDA graph fp16 batch {inputs.batch} (cuda)",
            config={"device": CUDA_DEVICE, "batch": inputs.batch, "shapes": shapes},
            precision=Precision.FP16, dynamic_batch=False,
            notes=("captured once at the measured input shapes: every call must use those exact "
                   "shapes, so the batch sweep is skipped",
                   "replay re-runs the recorded kernels with no Python or launch overhead; "
                   "models with data-dependent control flow or host syncs cannot be captured"))

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'PyTorch FP16 on the GPU, captured in a CUDA graph (batch 1)', and the capture as the session does it."""
        dtype = "torch.bfloat16" if str(spec.precision) == "bf16" else "torch.float16"
        code = "\n".join([
            "import torch", "",
            f'model = model.to("cuda", {dtype}).eval()',
            f'static_x = x.to("cuda", {dtype})  # the shape every later call must have',
            "side = torch.cuda.Stream()  # warm the kernels up off the capturing stream",
            "side.wait_stream(torch.cuda.current_stream())",
            "with torch.cuda.stream(side), torch.inference_mode():",
            "    for _ in range(3):",
            "        model(static_x)",
            "torch.cuda.current_stream().wait_stream(side)",
            "graph = torch.cuda.CUDAGraph()",
            "with torch.inference_mode(), torch.cuda.graph(graph):",
            "    static_y = model(static_x)",
            "# each call: static_x.copy_(new_x); graph.replay(); then read static_y"])
        batch = captured_batch(spec, inputs) if inputs is not None else spec.config.get("batch")
        return Description(f"PyTorch {wording.precision(str(spec.precision))} on the GPU, captured in a CUDA graph "
                           f"(batch {batch})", code)

    def open(self, spec: CandidateSpec, model: ModelRef) -> "CudaGraphSession":
        """Rebuild the module in fp16 on the GPU and capture it at the spec's batch."""
        loaded = model.load()
        return CudaGraphSession(loaded.module, precision=str(spec.precision),
                                sample=loaded.make_feeds(batch=captured_batch(spec, model.inputs), seed=3)[0])


def captured_batch(spec: CandidateSpec, inputs: ModelInputs) -> int:
    """The batch the graph is captured at: the spec's, else (specs from before multi-input) its one shape's."""
    if "batch" in spec.config:
        return int(spec.config["batch"])
    if spec.config.get("shape"):
        return int(spec.config["shape"][0])
    return inputs.batch


def shape_mismatch(expected: Mapping[str, tuple[int, ...]], feed: Mapping[str, np.ndarray]) -> str | None:
    """Why a feed cannot replay a graph captured at `expected` shapes (by input, in order); None if it can."""
    if len(feed) != len(expected):
        return f"this CUDA graph was captured for {len(expected)} inputs; got {len(feed)}"
    for (name, shape), array in zip(expected.items(), feed.values()):
        if tuple(array.shape) != tuple(shape):
            return (f"this CUDA graph was captured for input shape {tuple(shape)} of {name!r}; got "
                    f"{tuple(array.shape)} (a graph cannot change shape)")
    return None


class CudaGraphSession(TorchSession):
    """A TorchSession that replays one captured CUDA graph; each input is copied into its static buffer."""

    def __init__(self, module: Any, *, precision: str, sample: Feed) -> None:
        super().__init__(module, device=CUDA_DEVICE, precision=precision)
        torch = self._torch
        self.shapes = {name: tuple(a.shape) for name, a in sample.items()}
        # One static buffer per input: replay reads whatever sits at these addresses.
        # A TorchScript `int sr` arrives as a Python number: captured as it is, it cannot change on replay.
        self._static_in = tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in super().prepare(sample))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        # Capture needs lazily initialised kernels (cuDNN/cuBLAS handles, autotuning) to exist
        # already, and they must be created off the capturing stream.
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(WARMUP_CALLS):
                self.module(*self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(self.graph):
            self._static_out = self.module(*self._static_in)
        torch.cuda.synchronize()

    def prepare(self, feed: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Every input on the GPU (floats in fp16); each must have its captured shape."""
        problem = shape_mismatch(self.shapes, feed)
        if problem:
            raise ValueError(problem)
        return super().prepare(feed)

    def run(self, prepared: tuple[Any, ...]) -> Any:
        """Copy each input into its graph buffer and replay; the output buffer is reused."""
        for buffer, tensor in zip(self._static_in, prepared):
            if isinstance(buffer, self._torch.Tensor):
                buffer.copy_(tensor)
            elif buffer != tensor:
                raise ValueError(f"this CUDA graph was captured with the number {buffer} for an argument; got "
                                 f"{tensor} (a graph replays the value it was captured with)")
        self.graph.replay()
        return self._static_out

    def info(self) -> dict:
        """The torch settings plus the captured shapes."""
        return {**super().info(), "cuda_graph": True,
                "captured_shapes": {name: list(shape) for name, shape in self.shapes.items()}}
