"""`demo:digits`: a small CNN trained at first use on scikit-learn's bundled 8x8 digits, with a held-out set.

Unlike the other demos, its weights are real: it is trained once (a few seconds on two cores, fixed
seeds) and cached under the planner's cache folder, so a worker process that rebuilds the model
loads the same weights instead of training again. The held-out 20% is written beside the weights in
the `--val-data` layout and is the plan's built-in validation data, so candidates are judged on
accuracy, not only on agreement with the original.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import nn

from planner.io import write_atomic

# Change this whenever the architecture, the split or the training recipe changes: the cache is keyed by it.
RECIPE_VERSION = "digits-v1"
INPUT_SHAPE = (1, 1, 8, 8)
PIXEL_MAX = 16.0  # the dataset's pixel values run 0..16
HELD_OUT_FRACTION = 0.2
SPLIT_SEED = 0
TRAIN_SEED = 0
EPOCHS = 6
BATCH = 32
VAL_BATCH = 64
LEARNING_RATE = 3e-3


class DigitsNet(nn.Module):
    """A small CNN for 8x8 grayscale digits; takes raw 0..16 pixel values and scales them itself."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        )
        self.classifier = nn.Linear(32 * 4 * 4, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of 1x8x8 images with pixel values 0..16."""
        # Scaling inside the model means raw dataset values, calibration and validation data all agree.
        x = self.features(x / PIXEL_MAX)
        return self.classifier(torch.flatten(x, 1))


@dataclass(frozen=True)
class Split:
    """The digits data split once, with a fixed seed: images are float32 Nx1x8x8 (0..16), labels int64."""

    train_x: np.ndarray
    train_y: np.ndarray
    val_x: np.ndarray
    val_y: np.ndarray


def load_split() -> Split:
    """scikit-learn's bundled digits (no download), shuffled with a fixed seed, the last 20% held out."""
    from sklearn.datasets import load_digits  # type: ignore[import-untyped]

    data = load_digits()
    x = np.asarray(data.images, dtype=np.float32).reshape(-1, *INPUT_SHAPE[1:])
    y = np.asarray(data.target, dtype=np.int64)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    cut = len(y) - int(round(len(y) * HELD_OUT_FRACTION))
    train, val = order[:cut], order[cut:]
    return Split(x[train], y[train], x[val], y[val])


def cache_folder() -> Path:
    """Where the trained weights and the held-out set live: the planner's cache folder, per recipe version."""
    from planner.paths import cache_dir

    return cache_dir() / "models" / RECIPE_VERSION


def weights_path() -> Path:
    """The cached state dict of the trained model."""
    return cache_folder() / "weights.pt"


def train(split: Split | None = None) -> tuple[DigitsNet, float]:
    """Train a fresh model on the training split; returns it (in eval mode) and the seconds training took."""
    split = split or load_split()
    start = time.perf_counter()
    generator = torch.Generator().manual_seed(TRAIN_SEED)
    # Seed the initial weights in a forked RNG so the caller's global RNG state neither matters nor changes.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TRAIN_SEED)
        model = DigitsNet()
    threads = torch.get_num_threads()
    # Ops this small lose far more to thread hand-offs than they gain (25 s on 2 busy cores vs 1.5 s on one),
    # and one thread keeps the summation order, hence the weights, the same from one run to the next.
    torch.set_num_threads(1)
    try:
        _fit(model, split, generator)
    finally:
        torch.set_num_threads(threads)
    return model.eval(), time.perf_counter() - start


def _fit(model: DigitsNet, split: Split, generator: torch.Generator) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = torch.from_numpy(split.train_x), torch.from_numpy(split.train_y)
    model.train()
    for _ in range(EPOCHS):
        order = torch.randperm(len(ys), generator=generator)
        for i in range(0, len(ys), BATCH):
            idx = order[i:i + BATCH]
            optimizer.zero_grad()
            loss_fn(model(xs[idx]), ys[idx]).backward()
            optimizer.step()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """The fraction of `x` the model classifies as `y`."""
    with torch.no_grad():
        predicted = model(torch.from_numpy(x)).argmax(dim=1).numpy()
    return float(np.mean(predicted == y))


def _load_cached(path: Path) -> DigitsNet | None:
    """The cached model, or None when there is none, it is unreadable or it was trained by another recipe."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(saved, dict) or saved.get("version") != RECIPE_VERSION:
            return None
        model = DigitsNet()
        model.load_state_dict(saved["state_dict"])
    except (OSError, RuntimeError, KeyError, ValueError, EOFError):
        return None
    return model.eval()


def _save(model: DigitsNet, path: Path, stats: dict[str, float]) -> None:
    buffer = io.BytesIO()
    torch.save({"version": RECIPE_VERSION, "state_dict": model.state_dict(), "stats": stats}, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda fh: fh.write(buffer.getvalue()))


def trained_model() -> DigitsNet:
    """The trained model: from the cache when it holds this recipe's weights, else trained now and cached.

    A cache that cannot be written is not an error: the model is still returned, and training is
    deterministic, so a worker that has to train again gets the same weights.
    """
    path = weights_path()
    cached = _load_cached(path) if path.exists() else None
    if cached is not None:
        return cached
    split = load_split()
    model, seconds = train(split)
    stats = {"train_seconds": seconds, "held_out_accuracy": accuracy(model, split.val_x, split.val_y)}
    try:
        _save(model, path, stats)
    except OSError:
        pass  # a read-only cache only costs the next process a few seconds of training
    return model


def training_stats() -> dict[str, float]:
    """What training recorded (seconds, held-out accuracy); empty when the cache holds none."""
    try:
        saved = torch.load(weights_path(), map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError, EOFError):
        return {}
    stats = saved.get("stats") if isinstance(saved, dict) and saved.get("version") == RECIPE_VERSION else None
    return dict(stats) if isinstance(stats, dict) else {}


def validation_folder() -> Path:
    """The held-out split in the `--val-data` layout (NAME.npy batches, NAME_labels.npy), written once.

    Labels are written before their batch, so a reader that sees a batch also sees its labels.
    """
    from planner.models.valdata import LABEL_SUFFIX

    folder = cache_folder() / "validation"
    split = None
    for i in range(0, _held_out_count(), VAL_BATCH):
        name = f"batch{i // VAL_BATCH:03d}"
        batch, labels = folder / f"{name}.npy", folder / f"{name}{LABEL_SUFFIX}"
        if batch.exists() and labels.exists():
            continue
        split = split or load_split()
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(labels, partial(np.save, arr=split.val_y[i:i + VAL_BATCH]))
        write_atomic(batch, partial(np.save, arr=split.val_x[i:i + VAL_BATCH]))
    return folder


def _held_out_count() -> int:
    # The dataset has 1797 images; computing the split's size avoids loading it when the folder is complete.
    total = 1797
    return int(round(total * HELD_OUT_FRACTION))
