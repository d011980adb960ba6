"""PyTorch on the CPU, tuned: pinned thread counts, channels_last, torch.compile, native bf16."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterable

from planner.hardware.memory_limits import CPP_COMPILER_BYTES, compile_env, compile_fit, limits_of, size_text
from planner.plugins import (
    MESSAGES,
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
from targets import wording
from targets.cpu import compute_threads, native_bf16

QUICK_LIMIT = 3


COMPILE_SCREEN_S = 10.0
"""What inductor's compile adds to a torch.compile candidate's screen: 9-10 s for demo:inefficient on a 2-core AMD
EPYC (14 s of wall time against 4-7 s for the uncompiled settings); a small model's compile is mostly fixed cost."""


class TorchCpuPlugin(Plugin):
    """PyTorch CPU configurations beyond the out-of-the-box baseline."""

    name = "cpu.torch"
    title = "PyTorch CPU settings"
    target = Target.CPU
    actions = (ActionId.THREADS, ActionId.CHANNELS_LAST, ActionId.CPU_COMPILE)
    runtime = "pytorch"
    summary = "PyTorch on CPU: thread pinning, channels_last, torch.compile (inductor), bf16"
    requires = ("torch",)
    needs_torch_module = True


    def screen_extra_s(self, spec: CandidateSpec) -> float:
        """A torch.compile candidate compiles before its first call: COMPILE_SCREEN_S beyond a plain screen."""
        return COMPILE_SCREEN_S if spec.config.get("compile") else 0.0

    def prediction_family(self, spec: CandidateSpec) -> str:
        """torch.compile candidates are the compile family, unless their precision decides."""
        family = super().prediction_family(spec)
        return "compile" if family == "runtime" and spec.config.get("compile") else family

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Each real configuration worth timing here; compile failures surface when measured."""
        threads = compute_threads(ctx.hw)
        image = ctx.model.inputs.image_like
        compiler = _c_compiler()
        notes: tuple[str, ...] = ()
        fit = compile_fit(limits_of(ctx.hw), weights_bytes=ctx.model.size_bytes,
                          activation_bytes=ctx.model.footprint.peak_bytes if ctx.model.footprint else None)
        if ctx.model.scripted:
            compiler = None
            notes = ("torch.compile candidates skipped: " + MESSAGES["scripted_module"].format(plugin=self.name),)
            ctx.log(notes[0])
        elif compiler is None:
            notes = ("torch.compile candidates skipped: no C compiler (gcc or cc) on PATH; "
                     "inductor needs one to build its CPU kernels",)
            ctx.log(notes[0])
        elif fit.count < 1:
            # Each compiler process inductor starts holds hundreds of MB: on a small board they are what the
            # out-of-memory killer would end, with the worker and perhaps the planner.
            compiler = None
            notes = (f"torch.compile candidates skipped: {fit.reason}",)
            ctx.log(notes[0])
        if not image:
            ctx.log(f"cpu.torch: no channels_last candidates: the model's first input is not a 4-D float "
                    f"image ({ctx.model.inputs.first.describe()})")
        dynamic = ctx.model.inputs.dynamic_batch
        plain = _spec(threads, Precision.FP32, channels_last=False, compile_mode=None,
                      dynamic=dynamic, notes=notes)
        layout = _spec(threads, Precision.FP32, channels_last=True, compile_mode=None,
                       dynamic=dynamic, notes=notes) if image else None
        compiled = _spec(threads, Precision.FP32, channels_last=image, compile_mode="default",
                         dynamic=dynamic, notes=notes, compile_threads=fit.count) if compiler else None
        bf16 = _spec(threads, Precision.BF16, channels_last=image, compile_mode=None,
                     dynamic=dynamic, notes=notes) if native_bf16(ctx.hw) else None
        if ctx.quick:
            # The three most likely winners: best layout eager, compiled, and bf16 where native.
            picks = [layout or plain, compiled, bf16 or (plain if layout else None)]
        else:
            compiled_plain = (_spec(threads, Precision.FP32, channels_last=False, compile_mode="default",
                                    dynamic=dynamic, notes=notes, compile_threads=fit.count)
                              if compiler and image else None)
            bf16_compiled = (_spec(threads, Precision.BF16, channels_last=image, compile_mode="default",
                                   dynamic=dynamic, notes=notes, compile_threads=fit.count)
                             if compiler and bf16 else None)
            picks = [plain, layout, compiled_plain, compiled, bf16, bf16_compiled]
        chosen = [s for s in picks if s is not None]
        yield from (chosen[:QUICK_LIMIT] if ctx.quick else chosen)

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'PyTorch FP32, channels-last, torch.compile, 2 threads', and the torch calls that set it up."""
        config = spec.config
        mode = config.get("compile")
        compiled = "" if not mode else "torch.compile" + ("" if mode == "default" else f" ({mode} mode)")
        title = wording.title(f"PyTorch {wording.precision(str(spec.precision))}",
                              "channels-last" if config.get("channels_last") else "", compiled,
                              wording.threads(config.get("threads")))
        return Description(title, wording.torch_code(precision=str(spec.precision), threads=config.get("threads"),
                                                     interop_threads=config.get("interop_threads"),
                                                     channels_last=bool(config.get("channels_last")),
                                                     compile_mode=mode))

    def open(self, spec: CandidateSpec, model: ModelRef) -> Any:
        """Rebuild the module in the worker and wrap it in a TorchSession with the spec's settings."""
        import torch

        from planner.pytorch.session import TorchSession

        interop = spec.config.get("interop_threads")
        if interop:
            try:
                # Settable only before the first parallel op, and loading runs a forward pass.
                torch.set_num_interop_threads(int(interop))
                interop = None
            except RuntimeError:
                pass  # TorchSession retries and records why it could not
        loaded = model.load()
        session = TorchSession(loaded.module, device="cpu", precision=str(spec.precision),
                               channels_last=bool(spec.config.get("channels_last")),
                               compile_mode=spec.config.get("compile"),
                               threads=spec.config.get("threads"), interop_threads=interop)
        if session.compile_mode:
            # torch.compile builds kernels on the first call; doing it here keeps compilation out
            # of the timings and makes a compile failure fail the open, with its own message.
            session.run(session.prepare(loaded.make_feeds()[0]))
        return session

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The module as a torch.export archive in the spec's precision; run.py sets its threads, channels_last
        and torch.compile as the session did."""
        config = spec.config
        settings = TorchSettings(device="cpu", precision=str(spec.precision),
                                 channels_last=bool(config.get("channels_last")), compile_mode=config.get("compile"),
                                 threads=config.get("threads"), interop_threads=config.get("interop_threads"))
        return torch_package(model.load().module, model.inputs, dest, settings, dynamic_batch=spec.dynamic_batch)


def _c_compiler() -> str | None:
    return shutil.which("gcc") or shutil.which("cc")


def _spec(threads: int, precision: Precision, *, channels_last: bool, compile_mode: str | None,
          dynamic: bool, notes: tuple[str, ...], compile_threads: int = 1) -> CandidateSpec:
    parts = [f"torch cpu {precision}", f"{threads}t"]
    if channels_last:
        parts.append("channels_last")
    if compile_mode:
        parts.append("compile" if compile_mode == "default" else f"compile-{compile_mode}")
    extra: tuple[str, ...] = ()
    if precision is Precision.BF16:
        extra = ("bf16 weights and activations: the CPU has native bf16 (AVX512-BF16/AMX)",)
    config: dict[str, Any] = {"device": "cpu", "threads": threads, "interop_threads": 1,
                              "channels_last": channels_last, "compile": compile_mode}
    if compile_mode:
        extra += ("compiled with inductor when opened (a first call), so timings exclude "
                  "compilation; a new batch size recompiles",
                  f"inductor builds at most {compile_threads} kernel{'s' if compile_threads != 1 else ''} at once, "
                  f"one C++ compiler process of up to {size_text(CPP_COMPILER_BYTES)} each: as many as the "
                  "memory and cores free when planned allow (the worker may lower it to what is free then)")
        config["env"] = compile_env(compile_threads)
    return CandidateSpec(
        plugin=TorchCpuPlugin.name, label=" ".join(parts),
        config=config,
        precision=precision, threads=threads, interop_threads=1, dynamic_batch=dynamic, notes=notes + extra)
