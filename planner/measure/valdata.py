"""Validation data for `--val-data DIR`: a folder of input batches, with labels if present.

Layout: every `NAME.npy` (not ending in `_labels.npy`) is one batch of a one-input model, batch
first; every `NAME.npz` is one batch of a model with several inputs, one array per input name
(`numpy.savez('batch0.npz', input_ids=..., attention_mask=...)`). An optional `NAME_labels.npy`
beside it holds that batch's integer class labels. With labels, the planner measures accuracy;
without them, agreement with the original model on these inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.errors import PlannerError
from planner.models.loaded import Feed
from planner.models.spec import ModelInputs

LABEL_SUFFIX = "_labels.npy"


def load_val_data(folder: Path, *, inputs: ModelInputs | None = None,
                  ) -> list[tuple[Feed, np.ndarray | None]]:
    """The (feed, labels or None) pairs in `folder`, sorted by file name; checked against `inputs`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PlannerError(f"--val-data {folder} is not a folder",
                           "pass a folder of .npy input batches (.npz for several inputs) and "
                           "NAME_labels.npy files")
    files = sorted(p for p in [*folder.glob("*.npy"), *folder.glob("*.npz")]
                   if not p.name.endswith(LABEL_SUFFIX))
    if not files:
        raise PlannerError(f"--val-data {folder} holds no .npy or .npz input batches",
                           "save each batch with numpy.save('batch0.npy', array), batch first "
                           "(numpy.savez('batch0.npz', name=array, ...) for several inputs)")
    pairs = []
    for path in files:
        feed = _read_feed(path, inputs)
        rows = len(next(iter(feed.values())))
        labels = None
        label_path = path.with_name(path.stem + LABEL_SUFFIX)
        if label_path.exists():
            labels = np.load(label_path, allow_pickle=False).astype(np.int64).reshape(-1)
            if len(labels) != rows:
                raise PlannerError(f"{label_path} has {len(labels)} labels for {rows} inputs",
                                   "give one integer label per input in the batch")
        pairs.append((feed, labels))
    return pairs


def _read_feed(path: Path, inputs: ModelInputs | None) -> Feed:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise PlannerError(f"{path} is not a readable .npy/.npz array ({exc})",
                           "save it with numpy.save or numpy.savez; object arrays are refused") from exc
    if isinstance(loaded, np.ndarray):
        names = inputs.names if inputs is not None else ("x",)
        if len(names) > 1:
            raise PlannerError(f"{path} holds one array, but the model takes {len(names)} inputs "
                               f"({', '.join(names)})",
                               f"save each batch as .npz with one array per input: "
                               f"numpy.savez('{path.stem}.npz', {', '.join(f'{n}=...' for n in names)})")
        arrays = {names[0]: loaded}
    else:
        with loaded:
            arrays = {k: loaded[k] for k in loaded.files}
        if inputs is not None:
            missing = [n for n in inputs.names if n not in arrays]
            if missing:
                raise PlannerError(f"{path} has no array for input {', '.join(missing)} (it holds "
                                   f"{', '.join(arrays) or 'nothing'})",
                                   f"save one array per input: {', '.join(inputs.names)}")
            arrays = {n: arrays[n] for n in inputs.names}
    feed: Feed = {}
    for name, array in arrays.items():
        spec = next((t for t in inputs.tensors if t.name == name), None) if inputs is not None else None
        if spec is not None and tuple(array.shape[1:]) != tuple(spec.shape[1:]):
            want = "x".join(map(str, ("B", *spec.shape[1:])))
            raise PlannerError(f"{path}: input {name} has shape {'x'.join(map(str, array.shape))}, but "
                               f"the model takes {want}", "save batches in the model's input shape")
        feed[name] = array.astype(np.float32) if array.dtype == np.float64 else array
    return feed


def labels_of(folder: Path | None) -> list[np.ndarray] | None:
    """The label arrays in batch order, or None when any batch has no labels (or no folder)."""
    if folder is None:
        return None
    pairs = load_val_data(folder)
    labels = [lab for _, lab in pairs if lab is not None]
    return labels if len(labels) == len(pairs) else None
