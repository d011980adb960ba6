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
from typing import Any

from planner.io import write_atomic
from planner.plugins.training import FinetuneError, TrainingOutcome, accuracy, held_out_data, training_data

__all__ = ["FinetuneError", "FinetuneResult", "accuracy", "finetune", "held_out_data", "load_weights",
           "save_weights", "training_data"]

BATCH = 32
LEARNING_RATE = 1e-3
SEED = 0


@dataclass(frozen=True)
class FinetuneResult(TrainingOutcome):
    """What one fine-tune did: steps, samples, and the accuracy before and after on its training data."""

    def note(self) -> str:
        """One line for the candidate's notes, saying on which data the two accuracies were measured."""
        return (f"fine-tuned: {self.steps} steps of supervised training (cross-entropy, Adam, batch {BATCH}) on "
                f"{self.samples} labelled samples ({self.data_basis}); accuracy on that training data "
                f"{self.accuracy_before:.2%} before fine-tuning, {self.accuracy_after:.2%} after (measured); "
                "the candidate's own accuracy is measured on the plan's validation data like any other's")


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
