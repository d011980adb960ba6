"""Validation data for `--val-data DIR`: a folder of `.npy` input batches, with labels if present.

Layout: every `NAME.npy` (not ending in `_labels.npy`) is one input batch, batch first; an
optional `NAME_labels.npy` beside it holds that batch's integer class labels. With labels, the
planner measures accuracy; without them, agreement with the original model on these inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.errors import PlannerError

LABEL_SUFFIX = "_labels.npy"


def load_val_data(folder: Path, *, input_shape: tuple[int, ...] | None = None,
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The (batch, labels or None) pairs in `folder`, sorted by file name; checked for shape."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PlannerError(f"--val-data {folder} is not a folder",
                           "pass a folder of .npy input batches (and NAME_labels.npy files)")
    files = sorted(p for p in folder.glob("*.npy") if not p.name.endswith(LABEL_SUFFIX))
    if not files:
        raise PlannerError(f"--val-data {folder} holds no .npy input batches",
                           "save each batch with numpy.save('batch0.npy', array), batch first")
    pairs = []
    for path in files:
        try:
            batch = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise PlannerError(f"{path} is not a readable .npy array ({exc})",
                               "save it with numpy.save; object arrays are refused") from exc
        if input_shape is not None and tuple(batch.shape[1:]) != tuple(input_shape[1:]):
            want = "x".join(map(str, ("B", *input_shape[1:])))
            raise PlannerError(f"{path} has shape {'x'.join(map(str, batch.shape))}, but the model "
                               f"takes {want}", "save batches in the model's input shape")
        labels = None
        label_path = path.with_name(path.stem + LABEL_SUFFIX)
        if label_path.exists():
            labels = np.load(label_path, allow_pickle=False).astype(np.int64).reshape(-1)
            if len(labels) != len(batch):
                raise PlannerError(f"{label_path} has {len(labels)} labels for {len(batch)} inputs",
                                   "give one integer label per input in the batch")
        pairs.append((batch.astype(np.float32) if batch.dtype == np.float64 else batch, labels))
    return pairs


def labels_of(folder: Path | None) -> list[np.ndarray] | None:
    """The label arrays in batch order, or None when any batch has no labels (or no folder)."""
    if folder is None:
        return None
    pairs = load_val_data(folder)
    labels = [lab for _, lab in pairs if lab is not None]
    return labels if len(labels) == len(pairs) else None
