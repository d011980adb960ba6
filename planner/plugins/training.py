"""Labelled data for the plugins that train (a pruned or factorised model's fine-tune, ternary-aware training).

Both train on the same data and judge accuracy the same way, so it is read in one place: the digits
demo's training split (its held-out split stays the plan's validation data), else the plan's own
labelled `--val-data`, which is then also what the accuracy is measured on, so it is optimistic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError

if TYPE_CHECKING:
    from planner.plugins import PlanContext


class FinetuneError(PlannerError):
    """Fine-tuning was asked for but cannot run (no labels, no PyTorch module, a model with several inputs)."""


@dataclass(frozen=True)
class TrainingOutcome:
    """What one fine-tune did: steps, samples, and the accuracy before and after on its training data.

    Each training plugin subclasses it with its own `note()` (what kind of training, on what weights).
    """

    steps: int
    samples: int
    accuracy_before: float
    accuracy_after: float
    data_basis: str

    def to_info(self) -> dict:
        """A JSON-ready record for the candidate's config."""
        return {"steps": self.steps, "samples": self.samples, "accuracy_before": round(self.accuracy_before, 6),
                "accuracy_after": round(self.accuracy_after, 6), "data": self.data_basis,
                "accuracy_measured_on": "the fine-tuning data"}


def _val_pairs(ctx: "PlanContext") -> list:
    from planner.models.valdata import load_val_data

    return load_val_data(ctx.val_data, inputs=ctx.model.inputs) if ctx.val_data else []


def _stacked(pairs: list) -> tuple[Any, Any]:
    import numpy as np

    x = np.concatenate([next(iter(feed.values())) for feed, _ in pairs])
    y = np.concatenate([labels for _, labels in pairs])
    return x, y


def training_data(ctx: "PlanContext", *, what: str = "fine-tuning") -> tuple[Any, Any, str]:
    """(inputs, labels, what they are) to train on: the digits demo's training split, else labelled --val-data.

    `what` names the training in the errors (for example "ternary-aware fine-tuning").
    """
    if ctx.model.source.text == "demo:digits":
        from planner.models.digits import load_split

        split = load_split()
        return split.train_x, split.train_y, "the digits demo's training split, not its held-out set"
    pairs = _val_pairs(ctx)
    if not pairs or any(labels is None for _, labels in pairs):
        raise FinetuneError(f"{what} needs labelled data, and this plan has none",
                            "pass --val-data with NAME_labels.npy beside each batch, or leave out --finetune-steps")
    if len(pairs[0][0]) != 1:
        raise FinetuneError(f"{what} takes models with a single input only",
                            "leave out --finetune-steps for this model")
    x, y = _stacked(pairs)
    return x, y, (f"{ctx.val_data_basis}, the same data the accuracy is then measured on, so the accuracy after "
                  "fine-tuning is optimistic")


def held_out_data(ctx: "PlanContext") -> tuple[Any, Any, str] | None:
    """(inputs, labels, what they are) from the plan's labelled validation data, or None without labels.

    This is the data the plan's accuracy is measured on (for the digits demo, its held-out split), so a
    setting chosen on it is judged the way the candidate will be.
    """
    pairs = _val_pairs(ctx)
    if not pairs or any(labels is None for _, labels in pairs) or len(pairs[0][0]) != 1:
        return None
    x, y = _stacked(pairs)
    return x, y, str(ctx.val_data_basis)


def accuracy(module: Any, x: Any, y: Any) -> float:
    """Top-1 accuracy of `module` (in eval mode) on inputs `x` with integer labels `y`."""
    import torch

    was_training = module.training
    module.eval()
    with torch.no_grad():
        predicted = module(torch.as_tensor(x)).argmax(dim=1)
    module.train(was_training)
    return float((predicted == torch.as_tensor(y)).float().mean())
