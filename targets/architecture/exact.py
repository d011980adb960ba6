"""Exact architecture transforms: fold BatchNorm, drop no-op layers, pad channels to the hardware's multiple.

Padding goes to 8 (fp32 vectors, tensor cores) and, where the CPU's INT8 kernels want a larger
multiple (16 with AVX-512 VNNI, 64 with AMX), also to that one, as a candidate meant for INT8.

Each computes the same function as the original (within float rounding); the measured candidate
still passes the fp32 fidelity gate like any other, which is the proof on the user's own model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import ActionId, CandidateSpec, PlanContext, Precision
from targets import wording
from targets.architecture import EXACT, ArchitecturePlugin

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel


class FoldPlugin(ArchitecturePlugin):
    """Fold each BatchNorm into the conv or linear layer before it; remove identity and dropout layers."""

    name = "architecture.fold"
    title = "BatchNorm folding"
    actions = (ActionId.FOLD_NORMS,)
    plan_note = "Measured here: BatchNorm folded into the layer before it (exact, no retraining)."
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

    def change_words(self, config: dict) -> tuple[str, str]:
        """Folding, and torch.fx's own fuse, which folds BatchNorm into the conv or linear layer before it."""
        return ("BatchNorm folded into the layer before it (exact, no retraining)",
                "from torch.fx.experimental.optimization import fuse\n\n"
                "model = fuse(model.eval())  # dropout and identity layers do nothing in eval mode")

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """One setting: everything foldable."""
        yield {"plugin": self.name}, "fold BatchNorm (exact)"


# The multiple SIMD and tensor-core kernels want: 8 fp32/fp16 channels fill AVX-512 and tensor-core
# tiles when paired; the lint's channel-alignment finding uses the same rule.
ALIGN_MULTIPLE = 8


def misaligned_layers(loaded: "LoadedModel") -> list[str] | None:
    """The conv layers the analysis says waste vector lanes (output side changeable); None if it cannot say."""
    from planner.models.loaded import make_feeds
    from planner.plugins.analysis import lint

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


def int8_multiple(hw: "HardwareProfile") -> tuple[int, str] | None:
    """The channel multiple this CPU's INT8 kernels want, when it is larger than 8, and why; else None.

    A u8s8 dot product (VNNI's vpdpbusd, AMX's tdpbusd) sums 4 int8 products into each 32-bit lane.
    With AVX-512 VNNI a register holds 16 such lanes, and oneDNN's INT8 convolutions block output
    channels by 16 (one int32 accumulator per channel per lane) and read input channels in groups
    of 4, so a channel count that is a multiple of 16 fills both. AMX tiles take 64 int8 values per
    row along the reduction (the next layer's input channels), so there 64 fills a tile row.
    AVX2 VNNI (8 lanes of 256 bits) and ARM's dot-product instructions are served by 8 already.
    """
    if hw.cpu.has("amx_int8"):
        return 64, ("AMX INT8 tiles take 64 int8 values per row along the input channels of the layer that "
                    "reads them")
    if hw.cpu.has("avx512_vnni"):
        return 16, ("AVX-512 VNNI sums 4 int8 products per 32-bit lane, 16 lanes per register, and oneDNN's "
                    "INT8 kernels block channels by 16")
    return None


class AlignPlugin(ArchitecturePlugin):
    """Pad conv output channels with zero weights where the analysis finds idle lanes: to 8, and to INT8's multiple."""

    name = "architecture.align"
    title = "Channel alignment"
    actions = (ActionId.ALIGN_CHANNELS,)
    plan_note = "Measured here: zero channel padding (exact, no retraining) shows what alignment gains."
    summary = "exact: conv output channels padded with zeros to the multiple the vector units want"
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

    def change_words(self, config: dict) -> tuple[str, str]:
        """The padding in words; no torch call pads channels, so the apply line says what to change."""
        multiple = int(config.get("multiple", ALIGN_MULTIPLE))
        purpose = " for INT8 kernels" if config.get("pairs_with") == str(Precision.INT8) else ""
        layers = config.get("layers")
        which = f"these conv layers ({', '.join(layers)})" if layers else "each conv layer"
        return (f"Conv output channels padded with zeros to a multiple of {multiple}{purpose} (exact, no retraining)",
                wording.comment(f"no single torch call: give {which} zero-weight output channels up to a multiple "
                                f"of {multiple}, and the layer that reads them zero weights for the new inputs (the "
                                "package's model is padded)"))

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """The layers the analysis names, padded to 8 (fp32/bf16 vectors, tensor cores)."""
        yield self.probe_config(ctx.model), f"align channels to {ALIGN_MULTIPLE} (exact)"

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Padding to 8; and, where this CPU's INT8 kernels want more, padding to their multiple for INT8."""
        yield from super().candidates(ctx)
        wanted = int8_multiple(ctx.hw)
        if wanted is None:
            return
        multiple, why = wanted
        config = {**self.probe_config(ctx.model), "multiple": multiple, "pairs_with": str(Precision.INT8)}
        _, at_8 = self.rewrite(ctx.model.module, self.probe_config(ctx.model), ctx.model)
        _, changes = self.rewrite(ctx.model.module, config, ctx.model)
        if changes == at_8:
            ctx.log(f"{self.name}: padding to {multiple} for INT8 gives the same channel counts as padding to 8")
            return
        label = f"align channels to {multiple} for INT8 kernels (exact)"
        ctx.log(f"{label}: " + "; ".join(changes[:6]) + (" ..." if len(changes) > 6 else ""))
        yield self.spec(ctx, config, label, changes, (
            f"the padding targets INT8 kernels ({why}); measured here in fp32 PyTorch eager the extra "
            "channels are only extra work, so its speed alone says little: the interaction step measures it "
            "quantized, with the best INT8 candidate rebuilt on the padded model",))
