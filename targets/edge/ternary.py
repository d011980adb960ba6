"""Ternary weights written as a real 2-bit file and run by ONNX Runtime's 2-bit kernel.

Per output channel, weights with |w| <= 0.7 * mean|w| become 0 and the rest +-a, where a is the
mean |w| of the kept ones (ternary weight networks). Linear layers run packed at 2 bits in
ONNX Runtime's MatMulNBits with int8 compute (accuracy_level 4); convolutions are stored 2-bit
packed too and unpacked once when the session loads, then compute in fp32; the rest stays fp32
(see targets/edge/ternary_pack).
ONNX Runtime's own log is checked, so a silent fallback to dequantising every call fails the
candidate instead of being timed as a ternary kernel. Without ternary-aware training accuracy
usually drops a lot: the fidelity gate measures it, and `finetune` offers the training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from planner.errors import PlannerError
from planner.hardware.profile import EDGE_DEVICE_CLASSES
from planner.onnx.files import model_bytes
from planner.onnx.package import ort_package
from planner.onnx.session import OrtSession
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
from planner.plugins.training import FinetuneError, TrainingOutcome, training_data
from targets import wording

THRESHOLD_FACTOR = 0.7
BITS_PER_WEIGHT = 2
SESSION_OPTIONS = {"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
                   "inter_op_threads": 1}
"""The ONNX Runtime options of the 2-bit file's session and package (with the candidate's intra-op threads)."""


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


class TernaryKernelError(PlannerError):
    """ONNX Runtime cannot run (or silently would not run) the 2-bit kernel the candidate needs."""


class TernaryPlugin(Plugin):
    """Ternary Linear layers packed at 2 bits, run by ONNX Runtime's MatMulNBits on the CPU."""

    name = "edge.ternary"
    title = "ONNX Runtime ternary weights"
    build_cost_s = 3.0  # ternary weights, packed, and their fidelity check
    build_precision = "ternary"
    target = Target.EDGE
    actions = (ActionId.TERNARY,)
    arithmetic = Arithmetic.REDUCED_PRECISION
    runtime = "onnxruntime"
    phase = Phase.EXTRA_IMPACT
    fuses_graph = True
    summary = ("ternary weights {-a, 0, +a} per output channel in a 2-bit ONNX file, Linear layers on "
               "ONNX Runtime's 2-bit kernel (no retraining unless asked)")
    requires = ("onnx", "onnxruntime")
    needs_onnx = True

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """The packed file and two candidates on it (1 thread and all cores); quick runs not for a board skip it."""
        from planner.onnx.export import shared_onnx
        from targets.edge.ternary_pack import BLOCK_SIZE, kernel_problem, pack_onnx

        asked = bool(ctx.options.finetune_steps)
        # Planned for a board (detected, or named with --device): its size matters there, so it is measured.
        for_board = str(ctx.hw.device_class) in EDGE_DEVICE_CLASSES or bool(ctx.options.device)
        if ctx.quick and not asked and not for_board:
            ctx.log("edge.ternary: skipped in quick runs off edge boards (ternary weights without "
                    "retraining rarely pass the fidelity check); name the board with --device, plan without "
                    "--quick, or pass --finetune-steps to measure it")
            return
        problem = kernel_problem()
        if problem:
            raise TernaryKernelError(problem, "plan INT8 instead, or install an ONNX Runtime (1.22 or "
                                     "newer) whose CPU kernels run MatMulNBits with 2-bit weights")
        export = shared_onnx(ctx)
        out_dir = Path(ctx.workdir) / "ternary"
        packed = pack_onnx(export.path, out_dir / f"{export.path.stem}.ternary-2bit.onnx")
        size = model_bytes(packed.path)
        per_layer = "; ".join(f"{layer.name}: {layer.storage}" for layer in packed.layers)
        notes = ("no retraining: ternary weights need ternary-aware training to keep accuracy; if the "
                 "fidelity check fails, the size and speed are what training could make deployable",
                 f"{packed.packed_layers} of {len(packed.layers)} weighted layers run packed at 2 bits "
                 f"(ONNX Runtime MatMulNBits, int8 compute, blocks of {BLOCK_SIZE}); the rest: {per_layer}",
                 f"packed file {size:,} bytes on disk (measured), beside {model_bytes(export.path):,} for "
                 f"the fp32 export{_debug_note(packed.debug_bytes_dropped)}", *export.notes())
        yield from self._specs(ctx, packed.path, "", notes, export.dynamic_batch)
        steps = ctx.options.finetune_steps
        if steps:
            yield from self._finetuned(ctx, int(steps), out_dir)

    def _finetuned(self, ctx: PlanContext, steps: int, out_dir: Path) -> Iterable[CandidateSpec]:
        """The ternary file again after a ternary-aware fine-tune on labelled data."""
        import copy
        import dataclasses

        from planner.onnx.export import export_onnx
        from targets.edge.ternary_pack import pack_onnx

        if ctx.model.module is None:
            raise FinetuneError("ternary-aware fine-tuning needs the model's PyTorch module; this model is ONNX-only",
                                "plan the PyTorch model, or leave out --finetune-steps")
        x, y, basis = training_data(ctx, what="ternary-aware fine-tuning")
        tuned = copy.deepcopy(ctx.model.module)
        ctx.log(f"edge.ternary: fine-tuning {steps} steps with ternary weights on {len(y)} samples ({basis})")
        result = finetune_ternary(tuned, x, y, steps=steps, data_basis=basis)
        export = export_onnx(dataclasses.replace(ctx.model, module=tuned), out_dir / "finetuned.fp32.onnx",
                             dynamic_batch=ctx.model.inputs.dynamic_batch)
        packed = pack_onnx(export.path, out_dir / f"{export.path.stem}.ternary-2bit.onnx")
        notes = (result.note(), f"packed file {model_bytes(packed.path):,} bytes on disk (measured)"
                 f"{_debug_note(packed.debug_bytes_dropped)}",
                 *export.notes())
        yield from self._specs(ctx, packed.path, f", fine-tuned {steps} steps", notes, export.dynamic_batch,
                               finetune_steps=steps)

    def _specs(self, ctx: PlanContext, path: Path, suffix: str, notes: tuple[str, ...], dynamic_batch: bool,
               **extra: Any) -> Iterable[CandidateSpec]:
        """One candidate on one core and one on all of them (when there are more)."""
        from targets.edge.ternary_pack import BLOCK_SIZE

        all_cores = max(1, int(ctx.hw.cpu.usable_cores))
        for threads in dict.fromkeys((1, all_cores)):
            yield CandidateSpec(
                plugin=self.name, label=f"onnxruntime ternary 2-bit{suffix} (cpu, {threads}t)",
                config={"mode": "ternary-2bit", "provider": "CPUExecutionProvider", "intra_op_threads": threads,
                        "accuracy_level": 4, "block_size": BLOCK_SIZE, "threshold_factor": THRESHOLD_FACTOR,
                        **extra},
                precision=Precision.TERNARY, artifacts={"onnx": str(path)}, threads=threads,
                dynamic_batch=dynamic_batch, notes=notes)

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'ONNX Runtime, ternary weights in a 2-bit file, 2 threads': the packed file's session (no ONNX Runtime call
        makes the file: its package holds it)."""
        steps = spec.config.get("finetune_steps")
        title = wording.title("ONNX Runtime, ternary weights in a 2-bit file",
                              f"fine-tuned {steps} steps" if steps else "", wording.threads(spec.threads))
        name = wording.file_name(spec.artifacts.get("onnx"), "model.ternary-2bit.onnx")
        made = wording.comment(f"{name}: weights in {{-a, 0, +a}} per output channel, packed at 2 bits by the planner "
                               "(no ONNX Runtime call makes it); its package holds the file, and needs ONNX Runtime "
                               "1.22 or newer")
        session = wording.ort_session_code(SESSION_OPTIONS | {"intra_op_threads": spec.threads}, name)
        return Description(title, wording.code(made, session))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "TernarySession":
        """An ONNX Runtime session over the packed file; its first prepare checks ORT's log for a fallback."""
        return TernarySession(spec.artifacts["onnx"], threads=spec.threads)

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The 2-bit file and an ONNX Runtime run.py with the options its session runs with (its ONNX Runtime
        must have the 2-bit MatMulNBits kernel: requirements.txt pins the version measured)."""
        return ort_package(spec.artifacts["onnx"], dest, SESSION_OPTIONS | {"intra_op_threads": spec.threads},
                           notes=("needs an ONNX Runtime whose CPU kernels run MatMulNBits with 2-bit weights "
                                  "(1.22 or newer; requirements.txt pins the version measured)",))


def _debug_note(dropped: int) -> str:
    """How much of the size difference is the exporter's debug metadata, which the packed file leaves out."""
    if not dropped:
        return ""
    return (f"; of the difference, {dropped:,} bytes are the exporter's debug metadata (source stack traces, "
            "shape annotations) that ONNX Runtime never reads, left out of the packed file")


class TernarySession(OrtSession):
    """ONNX Runtime over the 2-bit file; fails on first use if ORT says it dequantises every call."""

    def __init__(self, path: str | Path, *, threads: int | None) -> None:
        try:
            super().__init__(str(path), SESSION_OPTIONS | {"intra_op_threads": threads})
        except Exception as exc:  # noqa: BLE001 - ORT raises its own types for a missing kernel
            raise TernaryKernelError(f"ONNX Runtime cannot open the 2-bit ternary file: {exc}",
                                     "install an ONNX Runtime whose CPU kernels include MatMulNBits") from exc
        self.path = Path(path)
        self.threads = threads
        self._checked = ""

    def prepare(self, feed: Any) -> dict:
        """The feed dict; the first call also runs it once with ORT's log captured (not timed)."""
        from targets.edge.ternary_pack import capture_ort_log, fallback_reason

        prepared = super().prepare(feed)
        if not self._checked:
            reason = fallback_reason(capture_ort_log(self.path, prepared, threads=self.threads))
            if reason:
                raise TernaryKernelError(reason, "use an ONNX Runtime build with 2-bit int8-compute kernels "
                                         "for this CPU, or plan INT8")
            self._checked = "ONNX Runtime's INFO log shows no fallback to unpacked compute"
        return prepared

    def info(self) -> dict:
        """The ORT settings, the packed file's size on disk and which layers run packed."""
        from targets.edge.ternary_pack import describe_packed

        return {**super().info(), "precision": "ternary (2-bit packed file; Linear layers run packed)",
                "model_file_bytes": model_bytes(self.path), "kernel_check": self._checked or "not run yet",
                "ternary_layers": describe_packed(self.path)}


@dataclass(frozen=True)
class FinetuneResult(TrainingOutcome):
    """What a ternary-aware fine-tune did: steps, and accuracy with ternary weights before and after."""

    def note(self) -> str:
        """One line for the candidate's notes."""
        return (f"ternary-aware fine-tune: {self.steps} steps (straight-through estimator) on {self.samples} "
                f"labelled samples ({self.data_basis}); accuracy with ternary weights {self.accuracy_before:.2%} "
                f"before, {self.accuracy_after:.2%} after, measured on that data")


def ternary_accuracy(module: Any, x: Any, y: Any, factor: float = THRESHOLD_FACTOR) -> float:
    """Accuracy of the module with its Conv/Linear weights ternarised (the module itself is left as it was)."""
    import copy

    import torch

    clone = copy.deepcopy(module).eval()
    ternarize_module(clone, factor=factor)
    with torch.no_grad():
        predicted = clone(torch.as_tensor(x)).argmax(dim=1)
    return float((predicted == torch.as_tensor(y)).float().mean())


def finetune_ternary(module: Any, x: Any, y: Any, *, steps: int, batch: int = 32, lr: float = 1e-3,
                     factor: float = THRESHOLD_FACTOR, seed: int = 0, data_basis: str = "") -> FinetuneResult:
    """Ternary-aware training with the straight-through estimator, in place on `module`'s latent weights.

    Each step runs forward and backward with the weights ternarised, then applies the gradient to
    the full-precision weights kept underneath (the estimator treats ternarisation as identity
    for the gradient). Afterwards the module holds the trained latent weights; ternarising them
    (as the packer does) gives the deployed model.
    """
    import torch
    from torch import nn

    if steps < 1:
        raise FinetuneError(f"--finetune-steps must be at least 1, got {steps}")
    xs, ys = torch.as_tensor(x), torch.as_tensor(y)
    before = ternary_accuracy(module, xs, ys, factor)
    layers = [m for m in module.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))]
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    module.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small steps lose more to thread hand-offs than they gain
    try:
        _steps(module, layers, optimizer, loss_fn, xs, ys, steps=steps, batch=batch, factor=factor,
               generator=generator)
    finally:
        torch.set_num_threads(threads)
    module.eval()
    return FinetuneResult(steps=steps, samples=len(ys), accuracy_before=before,
                          accuracy_after=ternary_accuracy(module, xs, ys, factor), data_basis=data_basis)


def _steps(module: Any, layers: list, optimizer: Any, loss_fn: Any, xs: Any, ys: Any, *, steps: int, batch: int,
           factor: float, generator: Any) -> None:
    import torch

    for _ in range(steps):
        idx = torch.randint(0, len(ys), (min(batch, len(ys)),), generator=generator)
        latent = [layer.weight.detach().clone() for layer in layers]
        with torch.no_grad():
            for layer in layers:
                layer.weight.copy_(ternarize_weight(layer.weight, factor)[0])
        optimizer.zero_grad()
        loss_fn(module(xs[idx]), ys[idx]).backward()
        with torch.no_grad():
            for layer, weights in zip(layers, latent):
                layer.weight.copy_(weights)  # the gradient was taken at the ternary point; it updates the latent one
        optimizer.step()
