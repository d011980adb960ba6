"""Architecture plugins: transforms that change the model itself, measured like any candidate.

Each plugin rewrites the torch module (exactly, or approximately with a fidelity check) and yields
a candidate that runs the rewritten module in PyTorch eager with the baseline's settings, so its
speedup is the architecture's alone. The transform travels as plain data ({"plugin": name,
...settings}) and is re-applied deterministically wherever the model is rebuilt: a hardware
plugin's worker given `ModelRef(transform=...)` measures the two changes combined.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import CandidateSpec, ModelRef, PlanContext, Plugin, Precision, Target

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel
    from planner.results.values import Fidelity

EXACT, APPROXIMATE, FINETUNED, REDESIGN = "exact", "approximate", "fine-tuned", "redesign"
"""What kind of change a candidate's transform makes (its spec's config["architecture"]); "fine-tuned" is
an approximation whose weights were then trained for a few steps, so it no longer "needs fine-tuning"."""


class ArchitecturePlugin(Plugin):
    """Base class: `rewrite` changes a module; the rest (check, candidates, open) is shared."""

    target = Target.ANY
    requires = ("torch",)
    needs_torch_module = True
    kind = EXACT

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """(the rewritten module, one line per change); raise NotApplicableError when nothing applies."""
        raise NotImplementedError

    def applies(self, model: "LoadedModel") -> str:
        """'' when the transform changes this model, else why it does not (checked without measuring)."""
        from targets.architecture.transforms import NotApplicableError

        try:
            self.rewrite(model.module, self.probe_config(model), model)
        except NotApplicableError as exc:
            return f"{self.name} does not apply: {exc}"
        return ""

    def probe_config(self, model: "LoadedModel") -> dict:
        """The settings `applies` tries (the first candidate's)."""
        return {"plugin": self.name}

    def check(self, hw: "HardwareProfile", model: "LoadedModel") -> list[str]:
        """The base reasons, then why the transform does not apply to this model (if it does not)."""
        reasons = super().check(hw, model)
        if not reasons:
            reason = self.applies(model)
            if reason:
                reasons.append(reason)
        return reasons

    def transform(self, loaded: "LoadedModel", config: dict) -> "LoadedModel":
        """The loaded model with its module rewritten by `config` (deterministic: same weights in, same out)."""
        module, changes = self.rewrite(loaded.module, config, loaded)
        tuned = config.get("finetuned")
        if tuned:
            # The rewrite is deterministic, so the weights trained on it in the planning process fit here.
            from targets.architecture.finetune import load_weights

            load_weights(module, tuned["weights"], tuned.get("sha256", ""))
            changes = [*changes, f"fine-tuned weights loaded from {tuned['weights']}"]
        module = module.eval()
        params = sum(p.numel() for p in module.parameters())
        size = sum(p.numel() * p.element_size() for p in module.parameters())
        size += sum(b.numel() * b.element_size() for b in module.buffers())
        note = f"architecture transform {self.name}: {len(changes)} change(s)"
        return dataclasses.replace(loaded, module=module, parameters=params, size_bytes=size, program=None,
                                   notes=[*loaded.notes, note])

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """The (transform config, label) pairs to offer; one by default."""
        yield {"plugin": self.name}, self.name

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One candidate per setting: the rewritten model in PyTorch eager, the baseline's way."""
        for config, label in self.settings(ctx):
            _, changes = self.rewrite(ctx.model.module, config, ctx.model)
            ctx.log(f"{label}: " + "; ".join(changes[:6]) + (" ..." if len(changes) > 6 else ""))
            yield self.spec(ctx, config, label, changes)

    def spec(self, ctx: PlanContext, config: dict, label: str, changes: list[str],
             notes: tuple[str, ...] = ()) -> CandidateSpec:
        """The candidate for one transform setting, run as the baseline runs (eager, fp32, default threads)."""
        device = "cuda" if ctx.hw.gpus else "cpu"
        shown = "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")
        return CandidateSpec(plugin=self.name, label=label,
                             config={"device": device, "transform": config, "architecture": self.kind},
                             precision=Precision.FP32, dynamic_batch=ctx.model.inputs.dynamic_batch,
                             notes=(f"{self.summary}: {shown}", *notes))

    def open(self, spec: CandidateSpec, model: ModelRef) -> Any:
        """Rebuild the model, re-apply the transform, and run it in PyTorch eager."""
        from planner.plugins.torch_session import TorchSession

        loaded = self.transform(model.load(), dict(spec.config["transform"]))
        return TorchSession(loaded.module, device=spec.config.get("device", "cpu"), precision=str(spec.precision))


def fidelity_of(ctx: PlanContext, module: Any) -> "Fidelity":
    """How closely `module` matches the original on the planner's fixed fidelity inputs (run here)."""
    import torch

    from planner.measure.evaluate import fidelity_batch_count, fidelity_inputs
    from planner.measure.fidelity import compare

    feeds = fidelity_inputs(ctx.model.inputs, count=fidelity_batch_count(ctx.quick))

    def outputs(m: Any) -> list:
        from planner.plugins.torch_session import TorchSession

        session = TorchSession(m, device="cpu")
        return [session.to_numpy(session.run(session.prepare(f))) for f in feeds]

    with torch.inference_mode():
        reference = ctx.shared.get("architecture.reference")
        if reference is None:
            reference = ctx.shared["architecture.reference"] = outputs(ctx.model.module)
        kind = ctx.options.get("output_kind")
        return compare(reference, outputs(module), kind=kind or None,
                       kind_basis=str(ctx.options.get("output_kind_basis", "")) if kind else "")


def gate_reason(fid: "Fidelity") -> str:
    """'' when the fidelity passes the fp32 gate (the one the measured candidate must pass), else why not."""
    from planner.measure.fidelity import DEFAULT_GATES

    return DEFAULT_GATES[Precision.FP32].judge(fid)[0]
