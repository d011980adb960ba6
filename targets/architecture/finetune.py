"""A short supervised fine-tune for an approximation (pruning, low rank) that failed the fidelity gate.

Training-free approximations often lose accuracy that a few hundred steps of ordinary training on
labelled data win back. `--finetune-steps N` asks for it: the gentlest failing setting's module is
trained for N steps (cross-entropy, Adam), its accuracy is measured on the training data before and
after, and the trained weights are written as a plain `.npz` (no pickle) into the plan's artifacts
folder. The candidate's transform names that file, so every worker that re-applies the transform
loads the same trained weights, and the normal evaluation then measures the candidate's accuracy
like any other's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError
from planner.io import write_atomic

if TYPE_CHECKING:
    from planner.plugins import PlanContext

BATCH = 32
LEARNING_RATE = 1e-3
SEED = 0


class FinetuneError(PlannerError):
    """Fine-tuning was asked for but cannot run (no labels, no PyTorch module, a model with several inputs)."""


@dataclass(frozen=True)
class FinetuneResult:
    """What one fine-tune did: steps, samples, and the accuracy before and after on its training data."""

    steps: int
    samples: int
    accuracy_before: float
    accuracy_after: float
    data_basis: str

    def note(self) -> str:
        """One line for the candidate's notes, saying on which data the two accuracies were measured."""
        return (f"fine-tuned: {self.steps} steps of supervised training (cross-entropy, Adam, batch {BATCH}) on "
                f"{self.samples} labelled samples ({self.data_basis}); accuracy on that training data "
                f"{self.accuracy_before:.2%} before fine-tuning, {self.accuracy_after:.2%} after (measured); "
                "the candidate's own accuracy is measured on the plan's validation data like any other's")

    def to_info(self) -> dict:
        """A JSON-ready record for the candidate's config."""
        return {"steps": self.steps, "samples": self.samples, "accuracy_before": round(self.accuracy_before, 6),
                "accuracy_after": round(self.accuracy_after, 6), "data": self.data_basis,
                "accuracy_measured_on": "the fine-tuning data"}


def accuracy(module: Any, x: Any, y: Any) -> float:
    """Top-1 accuracy of `module` (in eval mode) on inputs `x` with integer labels `y`."""
    import torch

    was_training = module.training
    module.eval()
    with torch.no_grad():
        predicted = module(torch.as_tensor(x)).argmax(dim=1)
    module.train(was_training)
    return float((predicted == torch.as_tensor(y)).float().mean())


def finetune(module: Any, x: Any, y: Any, *, steps: int, batch: int = BATCH, lr: float = LEARNING_RATE,
             seed: int = SEED, data_basis: str = "") -> FinetuneResult:
    """Train `module` in place for `steps` minibatch steps on (x, y); accuracy on (x, y) before and after."""
    import torch
    from torch import nn

    if steps < 1:
        raise FinetuneError(f"--finetune-steps must be at least 1, got {steps}", "pass a positive number of steps")
    xs, ys = torch.as_tensor(x), torch.as_tensor(y)
    before = accuracy(module, xs, ys)
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small steps lose more to thread hand-offs than they gain
    module.train()
    try:
        for _ in range(steps):
            idx = torch.randint(0, len(ys), (min(batch, len(ys)),), generator=generator)
            optimizer.zero_grad()
            loss_fn(module(xs[idx]), ys[idx]).backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
        module.eval()
    return FinetuneResult(steps=steps, samples=len(ys), accuracy_before=before,
                          accuracy_after=accuracy(module, xs, ys), data_basis=data_basis)


def held_out_data(ctx: "PlanContext") -> tuple[Any, Any, str] | None:
    """(inputs, labels, what they are) from the plan's labelled validation data, or None without labels.

    This is the data the plan's accuracy is measured on (for the digits demo, its held-out split), so a
    setting chosen on it is judged the way the candidate will be.
    """
    import numpy as np

    from planner.measure.valdata import load_val_data

    pairs = load_val_data(ctx.val_data, inputs=ctx.model.inputs) if ctx.val_data else []
    if not pairs or any(labels is None for _, labels in pairs) or len(pairs[0][0]) != 1:
        return None
    x = np.concatenate([next(iter(feed.values())) for feed, _ in pairs])
    y = np.concatenate([labels for _, labels in pairs])
    return x, y, str(ctx.val_data_basis)


def training_data(ctx: "PlanContext") -> tuple[Any, Any, str]:
    """(inputs, labels, what they are): the digits demo's training split, else the plan's labelled --val-data."""
    import numpy as np

    from planner.measure.valdata import load_val_data

    if ctx.model.source.text == "demo:digits":
        from planner.models.digits import load_split

        split = load_split()
        return split.train_x, split.train_y, "the digits demo's training split, not its held-out set"
    pairs = load_val_data(ctx.val_data, inputs=ctx.model.inputs) if ctx.val_data else []
    if not pairs or any(labels is None for _, labels in pairs):
        raise FinetuneError("fine-tuning needs labelled data, and this plan has none",
                            "pass --val-data with NAME_labels.npy beside each batch, or leave out --finetune-steps")
    if len(pairs[0][0]) != 1:
        raise FinetuneError("fine-tuning takes models with a single input only",
                            "leave out --finetune-steps for this model")
    x = np.concatenate([next(iter(feed.values())) for feed, _ in pairs])
    y = np.concatenate([labels for _, labels in pairs])
    return x, y, (f"{ctx.val_data_basis}, the same data the accuracy is then measured on, so the accuracy after "
                  "fine-tuning is optimistic")


def save_weights(module: Any, path: Path) -> str:
    """Write the module's parameters and buffers to `path` as .npz (no pickle); their SHA-256."""
    import io

    import numpy as np

    arrays = {name: t.detach().cpu().numpy() for name, t in module.state_dict().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda f: f.write(data))
    return hashlib.sha256(data).hexdigest()


def load_weights(module: Any, path: str | Path, sha256: str = "") -> None:
    """Load weights written by `save_weights` into `module` (same layers); a clear error if they do not fit."""
    import io

    import numpy as np
    import torch

    file = Path(path)
    if not file.is_file():
        raise FinetuneError(f"the fine-tuned weights {file} are missing",
                            "plan again with --finetune-steps (the weights live in the plan's artifacts folder)")
    data = file.read_bytes()
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        raise FinetuneError(f"the fine-tuned weights {file} changed since the plan wrote them",
                            "plan again with --finetune-steps")
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        state = {name: torch.from_numpy(arrays[name].copy()) for name in arrays.files}
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise FinetuneError(f"the fine-tuned weights {file} do not fit the rewritten model: {exc}",
                            "plan again with --finetune-steps") from exc
