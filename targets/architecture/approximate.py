"""Training-free approximations: SVD low-rank factorisation and L1-norm structured channel pruning.

Both change the function, so each setting is judged before it is offered by the plan's fidelity
gate (`ctx.gate`), the rule its measured candidate will meet: with labelled validation data, the
accuracy within the plan's budget; else the fp32 gate. Low-rank takes the smallest rank that
passes, pruning the largest ratio that passes. When no setting passes, the gentlest one is still
measured (its speed is real) and the result says it needs fine-tuning, with the measured drop. With
`--finetune-steps N` and labelled data, that setting is also trained for N steps and offered again,
labelled "fine-tuned", with the accuracy before and after on the training data in its notes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import ActionId, Arithmetic, CandidateSpec, Phase, PlanContext
from targets import wording
from targets.architecture import APPROXIMATE, FINETUNED, ArchitecturePlugin, judge_rewrite

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel

# Ranks as a share of each layer's smaller side, smallest first; the break-even rule drops the large ones.
RANK_FRACTIONS = (0.125, 0.25, 0.375, 0.5)
PRUNE_RATIOS = (0.5, 0.25, 0.125)  # largest first: the most aggressive ratio that passes wins


def _search(plugin: ArchitecturePlugin, ctx: PlanContext, configs: list[tuple[dict, str]]) -> Iterable[CandidateSpec]:
    """The first config (in the order given) that passes the plan's fidelity gate; else the last, marked with
    the plugin's `rejection` (it needs fine-tuning), or unmarked where the gate cannot judge on these inputs."""
    from targets.architecture.transforms import NotApplicableError

    tried: list[str] = []
    last = None
    for config, label in configs:
        try:
            module, changes = plugin.rewrite(ctx.model.module, config, ctx.model)
        except NotApplicableError as exc:
            tried.append(f"{label}: {exc}")
            continue
        verdict = judge_rewrite(ctx, module)
        ctx.log(f"{label}: {verdict.line()}")
        if verdict.passed:
            # With labels the gate judged accuracy within the plan's budget; else closeness to the fp32 outputs.
            test = ("keeps accuracy on the labelled data within budget" if verdict.by_accuracy
                    else "passes the fp32 fidelity check")
            yield plugin.spec(ctx, config, label, changes,
                              (f"the gentlest setting that {test} here; tried: "
                               + ("; ".join(tried) if tried else "none before it"),))
            return
        # An accuracy names the data it was measured on, as the measured candidate's row does.
        why = verdict.why or "cannot judge"
        tried.append(f"{label}: {why}" + (f" on {verdict.data}" if verdict.by_accuracy else ""))
        last = (config, label, changes, verdict)
    if last is not None and last[3].undecided:
        # The gate cannot judge on these inputs (the original's outputs barely depend on them): no setting
        # could be chosen by it, so the gentlest is measured, its fidelity not established, and not called
        # one that needs fine-tuning, which nothing here showed.
        config, label, changes, verdict = last
        yield plugin.spec(ctx, config, label, changes,
                          (f"the gentlest setting: the plan's fidelity check cannot choose one here "
                           f"({verdict.decided_by}); tried: " + "; ".join(tried),))
    elif last is not None:
        config, label, changes, verdict = last
        test = ("kept accuracy on the labelled data within budget" if verdict.by_accuracy
                else "passed the fp32 fidelity check")
        yield plugin.spec(ctx, config, f"{label} ({plugin.rejection})", changes,
                          (f"no setting {test} on {verdict.data} without training: " + "; ".join(tried),))
        steps = ctx.options.finetune_steps
        if steps:
            yield _finetuned(plugin, ctx, config, label, changes, int(steps))


def _finetuned(plugin: ArchitecturePlugin, ctx: PlanContext, config: dict, label: str, changes: list[str],
               steps: int) -> CandidateSpec:
    """The gentlest failing setting again, after a short supervised fine-tune on labelled data.

    The trained weights go to the plan's artifacts folder; the candidate's transform names the file
    (with its hash), so each worker re-applies the rewrite and loads those weights.
    """
    from targets.architecture.finetune import FinetuneError, finetune, save_weights, training_data

    if ctx.model.module is None:
        raise FinetuneError("fine-tuning needs the model's PyTorch module; this model is ONNX-only",
                            "plan the PyTorch model, or leave out --finetune-steps")
    x, y, basis = training_data(ctx)
    module, _ = plugin.rewrite(ctx.model.module, config, ctx.model)
    ctx.log(f"{label}: fine-tuning {steps} steps on {len(y)} labelled samples ({basis})")
    result = finetune(module, x, y, steps=steps, data_basis=basis)
    ctx.log(f"{label}, fine-tuned: accuracy on the fine-tuning data {result.accuracy_before:.2%} before, "
            f"{result.accuracy_after:.2%} after")
    setting = "-".join(f"{k}{v}" for k, v in sorted(config.items()) if k != "plugin")
    path = Path(ctx.workdir) / "architecture" / f"{plugin.name.split('.')[-1]}-{setting}-finetuned-{steps}.npz"
    digest = save_weights(module, path)
    tuned = {**config, "finetuned": {"weights": str(path.resolve()), "sha256": digest, **result.to_info()}}
    spec = plugin.spec(ctx, tuned, f"{label}, fine-tuned {steps} steps", changes,
                       (result.note(), "the weights after fine-tuning are in " + str(path)))
    return dataclasses.replace(spec, config={**spec.config, "architecture": FINETUNED, "finetune_steps": steps})


class LowRankPlugin(ArchitecturePlugin):
    """SVD low-rank factorisation of the large linear and 1x1 conv layers, rank picked by fidelity."""

    name = "architecture.lowrank"
    title = "Low-rank factorisation"
    actions = (ActionId.FACTOR_DENSE,)
    arithmetic = Arithmetic.APPROXIMATE
    phase = Phase.EXTRA_IMPACT
    plan_note = ("Measured here: an SVD low-rank factorisation, the smallest rank whose outputs still agree "
                 "with the original model's (the fidelity check).")
    summary = "approximate: large linear and 1x1 conv layers replaced by two low-rank ones (SVD)"
    kind = APPROXIMATE
    rejection = "needs fine-tuning"

    def probe_config(self, model: "LoadedModel") -> dict:
        """The smallest rank tried (the most likely to save work)."""
        return {"plugin": self.name, "fraction": RANK_FRACTIONS[0]}

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """Factorise every eligible layer at the config's rank fraction."""
        from targets.architecture.transforms import MIN_FACTOR_WEIGHTS, NotApplicableError, lowrank

        new, done = lowrank(module, fraction=float(config["fraction"]))
        if not done.changed:
            why = "; ".join(done.skipped[:3]) or (f"no linear or 1x1 conv layer has {MIN_FACTOR_WEIGHTS} "
                                                  "weights or more")
            raise NotApplicableError(f"no layer is worth factorising ({why})")
        return new, done.changed

    def change_words(self, config: dict) -> tuple[str, str]:
        """The rank in words; the factorisation is torch.linalg.svd per layer, not one call."""
        rank = f"{float(config.get('fraction', RANK_FRACTIONS[0])) * 100:g}%"
        return (f"Low-rank layers (SVD): large linear and 1x1 conv layers at {rank} rank",
                wording.comment("no single torch call: factor each large linear or 1x1 conv weight with "
                                f"torch.linalg.svd and replace the layer by two of rank {rank} of its smaller side "
                                "(the package's model is factorised)"))

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """Unused: `candidates` searches the ranks."""
        return ()

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """The smallest rank that passes the fidelity gate (or the largest tried, needing fine-tuning)."""
        configs = [({"plugin": self.name, "fraction": f}, f"low-rank {f * 100:g}% rank (SVD)") for f in RANK_FRACTIONS]
        yield from _search(self, ctx, configs)


class PrunePlugin(ArchitecturePlugin):
    """L1-norm structured channel pruning at a few ratios, the largest that passes the fidelity gate."""

    name = "architecture.prune"
    title = "Structured pruning"
    build_cost_s = 2.0  # three pruning levels, each checked before measuring
    actions = (ActionId.COMPRESSION, ActionId.PRUNING)
    arithmetic = Arithmetic.APPROXIMATE
    phase = Phase.EXTRA_IMPACT
    summary = "approximate: conv output channels with the smallest L1 weight norm removed (structured pruning)"
    kind = APPROXIMATE
    rejection = "needs fine-tuning"

    def probe_config(self, model: "LoadedModel") -> dict:
        """The largest ratio tried (the one most likely to leave a whole multiple of 8 to remove)."""
        return {"plugin": self.name, "ratio": PRUNE_RATIOS[0]}

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """Prune every prunable conv at the config's ratio."""
        from targets.architecture.transforms import NotApplicableError, prune_channels

        new, done = prune_channels(module, ratio=float(config["ratio"]))
        if not done.changed:
            why = "; ".join(done.skipped[:3]) or "the model has no conv layers"
            raise NotApplicableError(f"no conv's channels can be removed without touching shared tensors ({why})")
        return new, done.changed

    def change_words(self, config: dict) -> tuple[str, str]:
        """The ratio in words; torch's pruning utilities only mask channels, so the apply line says what to remove."""
        share = f"{float(config.get('ratio', PRUNE_RATIOS[0])) * 100:g}%"
        return (f"Structured pruning: {share} of conv channels removed (smallest L1 norm)",
                wording.comment(f"no single torch call: remove the {share} of each conv's output channels with the "
                                "smallest L1 norm and the matching inputs of the layer after it "
                                "(torch.nn.utils.prune.ln_structured only zeroes them, which saves no time; the "
                                "package's model is pruned)"))

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """Unused: `candidates` searches the ratios."""
        return ()

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """The largest ratio that passes the fidelity gate (or the smallest, needing fine-tuning)."""
        configs = [({"plugin": self.name, "ratio": r}, f"prune {r * 100:g}% channels (L1)") for r in PRUNE_RATIOS]
        yield from _search(self, ctx, configs)
