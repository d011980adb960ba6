"""Validation data for `--val-data DIR`: a folder of input batches, with labels if present.

Layout: every `NAME.npy` (not ending in `_labels.npy`) is one batch of a one-input model, batch
first; every `NAME.npz` is one batch of a model with several inputs, one array per input name
(`numpy.savez('batch0.npz', input_ids=..., attention_mask=...)`). An optional `NAME_labels.npy`
beside it holds that batch's integer class labels. With labels, the planner measures accuracy;
without them, agreement with the original model on these inputs.

A folder with no such batches is read as samples: images or `.wav` clips, labelled by sub-folder
(planner/models/samples.py). A plan converts them once (`prepare_val_data`) into batches of this
layout in its artifacts folder, with a `samples.json` saying where they came from, so the workers,
the INT8 calibration and the fine-tunes all read the same arrays.

It lives with the models, below everything that reads it: it needs only the model's input specs,
and its readers run from the digits demo (which writes its held-out split in this layout) up to the
measuring worker, the INT8 calibration and the plugins that fine-tune.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import PlannerError
from planner.models.loaded import Feed
from planner.models.spec import BATCH, ModelInputs

if TYPE_CHECKING:
    from planner.models.samples import SampleOptions, SampleSet

LABEL_SUFFIX = "_labels.npy"
SAMPLES_NOTE = "samples.json"
"""Written beside batches converted from images or clips: what they were converted from."""


def load_val_data(folder: Path, *, inputs: ModelInputs | None = None, options: "SampleOptions | None" = None,
                  ) -> list[tuple[Feed, np.ndarray | None]]:
    """The (feed, labels or None) pairs in `folder`, sorted by file name; checked against `inputs`.

    A folder of images or `.wav` clips (no batches) is converted for `inputs` with `options`.
    """
    folder = check_folder(folder)
    files = _array_files(folder)
    if not files:
        return _samples(folder, inputs, options).pairs
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


def check_folder(folder: Path) -> Path:
    """`folder` as a Path, once it is known to be a folder (what a plan checks when the model is loaded, before
    reading anything in it); a clear error otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is a file, not a folder"
        raise PlannerError(f"--val-data {folder} {what}",
                           "pass a folder of images (.png, .jpg; in class sub-folders for labels), .wav "
                           "clips, or .npy input batches (.npz for several inputs) with NAME_labels.npy files")
    return folder


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
        # Only the batch axis may differ (dimension 0, or wherever a recurrent state keeps it).
        batch_axes = [i for i, a in enumerate(spec.axes) if a == BATCH] if spec is not None else []
        if spec is not None and (array.ndim != len(spec.shape) or any(
                d != expected for i, (d, expected) in enumerate(zip(array.shape, spec.shape))
                if i not in (batch_axes or [0]))):
            want = "x".join("B" if i in (batch_axes or [0]) else str(d) for i, d in enumerate(spec.shape))
            raise PlannerError(f"{path}: input {name} has shape {'x'.join(map(str, array.shape))}, but "
                               f"the model takes {want}", "save batches in the model's input shape")
        feed[name] = array.astype(np.float32) if array.dtype == np.float64 else array
    return feed


def labels_of(folder: Path | None, *, inputs: ModelInputs | None = None,
              options: "SampleOptions | None" = None) -> list[np.ndarray] | None:
    """The label arrays in batch order, or None when any batch has no labels (or no folder).

    A folder of images or clips needs the model's `inputs`: which files convert decides the batches.
    """
    if folder is None:
        return None
    pairs = load_val_data(folder, inputs=inputs, options=options)
    labels = [lab for _, lab in pairs if lab is not None]
    return labels if len(labels) == len(pairs) else None


@dataclass(frozen=True)
class PreparedValData:
    """Validation data ready for every reader: the batch folder, and what it was made from."""

    folder: Path  # .npy/.npz batches: the user's folder itself, or the converted copy
    source: Path  # the folder the user gave
    samples: int
    description: str  # what the samples are, in words (for the log and the report)
    skipped: str = ""  # the files left out and why, or ''
    classes: tuple[str, ...] = ()


def prepare_val_data(folder: Path, *, inputs: ModelInputs, options: "SampleOptions | None" = None,
                     workdir: Path) -> PreparedValData:
    """Check `folder` against `inputs`; images or clips are converted once into batches under `workdir`.

    Converting once means every worker process, the INT8 calibration and the fine-tunes read the
    same arrays, and none decodes the images again.
    """
    folder = Path(folder)
    pairs = load_val_data(folder, inputs=inputs, options=options)
    if _array_files(folder):
        rows = sum(len(next(iter(feed.values()))) for feed, _ in pairs)
        labelled = all(lab is not None for _, lab in pairs)
        return PreparedValData(folder=folder, source=folder, samples=rows,
                               description=f"{len(pairs)} batches ({rows} samples) of arrays from {folder}"
                                           + ("" if labelled else ", no labels"))
    found = _samples(folder, inputs, options)
    out = Path(workdir) / "val-data"
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.npz"), *out.glob("*.npy")]:
        old.unlink()
    for i, (feed, labels) in enumerate(found.pairs):
        # Widened to Any: numpy's type hints bind a **mapping of arrays to savez's bool `allow_pickle`
        # parameter; passing the parameter itself is not possible on numpy 1.26, which the project allows.
        arrays: dict[str, Any] = dict(feed)
        np.savez(out / f"batch{i:05d}.npz", **arrays)
        if labels is not None:
            np.save(out / f"batch{i:05d}{LABEL_SUFFIX}", labels)
    prepared = PreparedValData(folder=out, source=folder, samples=found.count, description=found.describe(),
                               skipped=found.skipped_text(), classes=found.classes)
    (out / SAMPLES_NOTE).write_text(json.dumps({"source": str(folder), "kind": found.kind, "samples": found.count,
                                                "description": prepared.description,
                                                "skipped": list(found.skipped), "classes": list(found.classes)},
                                               indent=1))
    return prepared


def samples_note(folder: Path | None) -> dict[str, Any]:
    """What a converted batch folder was made from (its `samples.json`), or {} for plain arrays."""
    if folder is None:
        return {}
    path = Path(folder) / SAMPLES_NOTE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _array_files(folder: Path) -> list[Path]:
    return sorted(p for p in [*folder.glob("*.npy"), *folder.glob("*.npz")] if not p.name.endswith(LABEL_SUFFIX))


def _samples(folder: Path, inputs: ModelInputs | None, options: "SampleOptions | None") -> "SampleSet":
    from planner.models.samples import load_samples

    if inputs is None:
        raise PlannerError(f"--val-data {folder} holds no .npy or .npz input batches, and reading it as images "
                           "or audio needs the model's inputs",
                           "save each batch with numpy.save('batch0.npy', array), batch first "
                           "(numpy.savez('batch0.npz', name=array, ...) for several inputs)")
    return load_samples(folder, inputs, options)
