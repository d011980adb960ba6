"""Exact architecture transforms: fold BatchNorm, drop no-op layers, pad channels to the hardware's multiple.

Each computes the same function as the original (within float rounding); the measured candidate
still passes the fp32 fidelity gate like any other, which is the proof on the user's own model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import PlanContext
from targets.architecture import EXACT, ArchitecturePlugin

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel


class FoldPlugin(ArchitecturePlugin):
    """Fold each BatchNorm into the conv or linear layer before it; remove identity and dropout layers."""

    name = "architecture.fold"
    summary = "exact: BatchNorm folded into the preceding conv/linear, identity and dropout layers removed"
    kind = EXACT

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """Fold, then drop no-ops; NotApplicableError (with every layer's reason) when neither changes anything."""
        from targets.architecture.transforms import NotApplicableError, drop_no_ops, fold_batchnorm

        folded, done = fold_batchnorm(module)
        dropped, gone = drop_no_ops(folded)
        changes = done.changed + gone.changed
        if not changes:
            why = "; ".join(done.skipped[:4]) or "the model has no BatchNorm layers"
            raise NotApplicableError(f"no BatchNorm follows a conv or linear layer directly ({why}), and there "
                                "are no identity or dropout layers")
        return dropped, changes

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """One setting: everything foldable."""
        yield {"plugin": self.name}, "fold BatchNorm (exact)"


# The multiple SIMD and tensor-core kernels want: 8 fp32/fp16 channels fill AVX-512 and tensor-core
# tiles when paired; the lint's channel-alignment finding uses the same rule.
ALIGN_MULTIPLE = 8


def misaligned_layers(loaded: "LoadedModel") -> list[str] | None:
    """The conv layers the analysis says waste vector lanes (output side changeable); None if it cannot say."""
    from planner.analysis.lint import lint
    from planner.models.loaded import make_feeds

    try:
        feed = make_feeds(loaded.inputs, count=1, seed=0)[0]
        import torch

        args = tuple(torch.from_numpy(a) for a in feed.values())
        findings = lint(loaded.module, args if len(args) > 1 else args[0])
    except Exception:  # noqa: BLE001 - the analysis is advice; without it, pad every misaligned conv
        return None
    for f in findings:
        if f.id == "channel-alignment":
            pairs = zip(f.layers, f.evidence.get("channels", ()), f.evidence.get("suggested_channels", ()))
            return [name for name, now, want in pairs if now.split("->")[1] != want.split("->")[1]]
    return []


class AlignPlugin(ArchitecturePlugin):
    """Pad conv output channels with zero weights up to a multiple of 8, where the analysis finds idle lanes."""

    name = "architecture.align"
    summary = "exact: conv output channels padded with zeros to a multiple of 8"
    kind = EXACT

    def probe_config(self, model: "LoadedModel") -> dict:
        """The layers the analysis names."""
        return {"plugin": self.name, "multiple": ALIGN_MULTIPLE, "layers": misaligned_layers(model)}

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """Pad the named layers (every misaligned one when the analysis named none)."""
        from targets.architecture.transforms import NotApplicableError, align_channels

        layers = config.get("layers")
        if layers == []:
            raise NotApplicableError("the analysis finds no conv whose channel count leaves vector lanes idle")
        new, done = align_channels(module, multiple=int(config.get("multiple", ALIGN_MULTIPLE)), layers=layers)
        if not done.changed:
            why = "; ".join(done.skipped[:4]) or "every conv's channels are already aligned"
            raise NotApplicableError(f"no misaligned conv can be padded without changing the model's function ({why})")
        return new, done.changed

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """One setting: the layers the analysis names, to the multiple of 8."""
        yield self.probe_config(ctx.model), f"align channels to {ALIGN_MULTIPLE} (exact)"
