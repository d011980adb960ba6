"""torch.compile (Inductor) on the GPU: default, reduce-overhead (CUDA graphs) and max-autotune."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.hardware.memory_limits import TRITON_WORKER_BYTES, Fit, compile_env, compile_fit, limits_of, size_text
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
from planner.plugins.packaging import PackageFiles
from planner.pytorch.package import TorchSettings, torch_package
from planner.pytorch.session import TorchSession
from targets import wording
from targets.nvidia.common import CUDA_DEVICE

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import Feed, LoadedModel

QUICK_MODES = ("default", "reduce-overhead")
FULL_MODES = (*QUICK_MODES, "max-autotune")
PRECISIONS = (Precision.FP32, Precision.FP16)
# These modes replay CUDA graphs, whose output buffers the next replay overwrites.
_CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
_NOTES = {
    "default": "Inductor fuses elementwise ops into generated Triton kernels",
    "reduce-overhead": "Inductor plus CUDA graphs: cuts per-kernel launch overhead; "
                       "one graph is recorded per input shape",
    "max-autotune": "Inductor benchmarks matmul/conv kernel choices at compile time "
                    "(slow to compile) and uses CUDA graphs",
}


class TorchCompilePlugin(Plugin):
    """The model compiled by torch.compile in several modes, fp32 and fp16."""

    name = "nvidia.torch_compile"
    title = "torch.compile on the GPU"
    target = Target.NVIDIA
    actions = (ActionId.GPU_COMPILE,)
    runtime = "torch-compile"
    summary = "torch.compile on CUDA: default / reduce-overhead / max-autotune, fp32 and fp16"
    # Inductor's CUDA backend generates Triton kernels, so triton is needed as much as torch.
    requires = ("torch", "triton")
    needs_torch_module = True
    needs_eager_module = True
    needs_cuda = True


    def prediction_family(self, spec: CandidateSpec) -> str:
        """The compile family, unless the candidate's precision decides."""
        family = super().prediction_family(spec)
        return "compile" if family == "runtime" else family

    def check(self, hw: HardwareProfile, model: LoadedModel) -> list[str]:
        """The contract's reasons, and memory: no Triton compile worker fitting beside the worker is one."""
        reasons = super().check(hw, model)
        fit = _compile_fit(hw, model)
        if fit.count < 1:
            reasons.append(fit.reason)
        return reasons

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Every mode x precision; max-autotune only outside quick runs (it compiles for minutes).

        Each holds inductor to as many Triton compile workers at once as the memory and cores allow: left
        alone it starts one per CPU in the affinity mask (up to 32), each a process of its own.
        """
        modes = QUICK_MODES if ctx.quick else FULL_MODES
        workers = max(1, _compile_fit(ctx.hw, ctx.model).count)
        for precision in PRECISIONS:
            for mode in modes:
                yield compile_spec(mode, precision, compile_workers=workers)

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'PyTorch FP16 on the GPU, torch.compile (reduce-overhead mode)', and the torch calls."""
        mode = str(spec.config["compile_mode"])
        compiled = "torch.compile" + ("" if mode == "default" else f" ({mode} mode)")
        return Description(f"PyTorch {wording.precision(str(spec.precision))} on the GPU, {compiled}",
                           wording.torch_code(device=CUDA_DEVICE, precision=str(spec.precision), compile_mode=mode))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "CompiledTorchSession":
        """Rebuild, compile, and run once so compilation is not counted in the timings."""
        loaded = model.load()
        return CompiledTorchSession(loaded.module, precision=str(spec.precision),
                                    compile_mode=spec.config["compile_mode"],
                                    warmup_feed=loaded.make_feeds(seed=3)[0])

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The module exported on the GPU in the spec's precision; run.py compiles it in the spec's mode."""
        mode = str(spec.config["compile_mode"])
        settings = TorchSettings(device=CUDA_DEVICE, precision=str(spec.precision), compile_mode=mode,
                                 mark_step=mode in _CUDAGRAPH_MODES)
        return torch_package(model.load().module, model.inputs, dest, settings, dynamic_batch=spec.dynamic_batch)


def _compile_fit(hw: HardwareProfile, model: LoadedModel) -> Fit:
    """How many Triton compile workers fit beside the compiling worker, by the profile's memory and cores."""
    footprint = getattr(model, "footprint", None)
    return compile_fit(limits_of(hw), weights_bytes=getattr(model, "size_bytes", None),
                       activation_bytes=footprint.peak_bytes if footprint is not None else None, gpu=True)


def compile_spec(mode: str, precision: Precision, *, compile_workers: int | None = None) -> CandidateSpec:
    """The spec of one compile mode at one precision; `compile_workers` caps inductor's Triton compile workers."""
    config: dict[str, Any] = {"device": CUDA_DEVICE, "compile_mode": mode}
    notes: tuple[str, ...] = (_NOTES[mode], "compiled before timing (compile time is in info); a "
                              "new batch size may trigger one recompile during the batch sweep")
    if compile_workers is not None:
        config["env"] = compile_env(compile_workers)
        notes += (f"inductor compiles with at most {compile_workers} Triton worker process"
                  f"{'es' if compile_workers != 1 else ''} at once (up to {size_text(TRITON_WORKER_BYTES)} "
                  "each): as many as the memory and cores free when planned allow",)
    return CandidateSpec(plugin=TorchCompilePlugin.name,
                         label=f"torch.compile {mode} {precision} (cuda)",
                         config=config, precision=precision, notes=notes)


class CompiledTorchSession(TorchSession):
    """A TorchSession whose module is compiled eagerly at open, with the compile time recorded."""

    def __init__(self, module: Any, *, precision: str, compile_mode: str, warmup_feed: Feed) -> None:
        super().__init__(module, device=CUDA_DEVICE, precision=precision, compile_mode=compile_mode)
        self._mark_step = compile_mode in _CUDAGRAPH_MODES
        start = time.perf_counter()
        # torch.compile is lazy: the first call traces and compiles; do it here, not in the timed loop.
        self.run(self.prepare(warmup_feed))
        self.sync()
        self.compile_s = time.perf_counter() - start

    def run(self, prepared: Any) -> Any:
        """One forward pass; with CUDA graphs, tell the graph tree a new iteration begins."""
        if self._mark_step:
            # Without this, cudagraph trees cannot tell when earlier outputs may be overwritten.
            self._torch.compiler.cudagraph_mark_step_begin()
        return super().run(prepared)

    def info(self) -> dict:
        """The torch settings plus the measured first-call (compile) time."""
        return {**super().info(), "compile_s": round(self.compile_s, 2)}
