"""Architecture plugins: transforms that change the model itself, measured like any candidate.

Each plugin rewrites the torch module (exactly, or approximately with a fidelity check) and yields
a candidate that runs the rewritten module in PyTorch eager with the baseline's settings, so its
speedup is the architecture's alone. The transform travels as plain data ({"plugin": name,
...settings}) and is re-applied deterministically wherever the model is rebuilt: a hardware
plugin's worker given `ModelRef(transform=...)` measures the two changes combined.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import CandidateSpec, Description, ModelRef, Phase, PlanContext, Plugin, Precision, Target
from planner.plugins.packaging import PackageFiles
from planner.pytorch.package import TorchSettings, torch_package
from targets import wording

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel
    from planner.plugins.gate import Verdict

EXACT, APPROXIMATE, FINETUNED, REDESIGN = "exact", "approximate", "fine-tuned", "redesign"
"""What kind of change a candidate's transform makes (its spec's config["architecture"]); "fine-tuned" is
an approximation whose weights were then trained for a few steps, so it no longer "needs fine-tuning"."""


class ArchitecturePlugin(Plugin):
    """Base class: `rewrite` changes a module; the rest (check, candidates, open) is shared."""

    target = Target.ANY
    requires = ("torch",)
    needs_torch_module = True
    kind = EXACT
    # What a failed fidelity gate means for this plugin's candidate, in the words its label and notes use.
    rejection = "fails the fidelity gate"
    runtime = "pytorch"  # the rewritten model runs the baseline's way, so its speedup is the architecture's
    phase = Phase.REDESIGN

    def prediction_family(self, spec: CandidateSpec) -> str:
        """architecture-exact, -approximate, -fine-tuned or -redesign: what kind of rewrite the candidate is."""
        return f"architecture-{spec.config.get('architecture', self.kind)}"

    def explain_gate(self, spec: CandidateSpec, status: str, reason: str) -> str:
        """An approximation that fails (or cannot confirm) the gate says what it needs, in its `rejection` words."""
        if spec.config.get("architecture") != APPROXIMATE:
            return reason
        if status == "rejected":
            return f"{self.rejection}: {reason.removeprefix('fidelity check: ')} (speed measured, accuracy drops)"
        return f"{reason} (if it drifts on your data too, it {self.rejection})"

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """(the rewritten module, one line per change); raise NotApplicableError when nothing applies."""
        raise NotImplementedError

    def change_words(self, config: dict) -> tuple[str, str]:
        """(title, apply) of one transform setting: what it changes in plain words, and the torch call that makes
        it, or one sentence where no single call does. By default the plugin's summary and no call."""
        return self.summary, ""

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """The change in plain words, with its fine-tuning and what a failed fidelity gate means for it."""
        title, code = self.change_words(dict(spec.config.get("transform") or {}))
        steps = spec.config.get("finetune_steps")
        if steps:
            title += f", fine-tuned {steps} steps"
            code += "\n" + wording.comment(f"then fine-tune {steps} steps on labelled data; the package holds the "
                                            "trained weights")
        elif spec.label.endswith(f"({self.rejection})"):
            title += f", {self.rejection}"  # the label says so where no setting passed the gate
        return Description(title, code)

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
        from planner.pytorch.session import TorchSession

        loaded = self.transform(model.load(), dict(spec.config["transform"]))
        return TorchSession(loaded.module, device=spec.config.get("device", "cpu"), precision=str(spec.precision))

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The rewritten module as a torch.export archive, run as measured (PyTorch eager, default settings):
        the archive holds the changed model itself, so the server needs neither the planner nor the rewrite."""
        loaded = self.transform(model.load(), dict(spec.config["transform"]))
        settings = TorchSettings(device=str(spec.config.get("device", "cpu")), precision=str(spec.precision))
        return torch_package(loaded.module, model.inputs, dest, settings, dynamic_batch=spec.dynamic_batch)


def judge_rewrite(ctx: PlanContext, module: Any) -> "Verdict":
    """The plan's fidelity gate (`ctx.gate`) on a rewritten module, judged as its measured candidate will be.

    The rewrite and the original both run here (PyTorch eager, CPU) on the gate's inputs, so their
    outputs differ by the rewrite alone. A rewrite changes the function by design: with labels the
    gate judges the accuracy within the plan's budget, else the fp32 gate.
    """
    import torch

    from planner.pytorch.session import TorchSession

    gate = ctx.gate
    if gate is None:
        raise RuntimeError("an approximate rewrite is chosen by the plan's fidelity gate, and this plan context "
                           "has none (ctx.gate; the pipeline gives one)")
    feeds = gate.inputs()

    def outputs(m: Any) -> list:
        session = TorchSession(m, device="cpu")
        return [session.to_numpy(session.run(session.prepare(f))) for f in feeds]

    with torch.inference_mode():
        # Every setting is compared with the same original outputs: computed once per plan.
        reference = ctx.shared.get("architecture.reference")
        if reference is None:
            reference = ctx.shared["architecture.reference"] = outputs(ctx.model.module)
        return gate.judge(reference, outputs(module), precision=Precision.FP32, changes_function=True)
