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
import math
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
    """The judged part's label arrays in batch order (`split_val_data`), or None when any batch has no labels
    (or no folder): the labels every candidate and the original are judged on.

    A folder of images or clips needs the model's `inputs`: which files convert decides the batches.
    """
    if folder is None:
        return None
    pairs = split_val_data(folder, inputs=inputs, options=options).judged
    labels = [lab for _, lab in pairs if lab is not None]
    return labels if len(labels) == len(pairs) else None


def check_labels(folder: Path, labels: list[np.ndarray] | None, output_shape: tuple[int, ...]) -> str:
    """Labels the model's class scores could never match are an error now, before anything is measured; a folder
    whose labels are all one class returns a warning (accuracy on it cannot tell a model from one that always
    answers that class). Outputs that are not class scores (batch, classes) are not checked: labels do not count there.
    """
    if not labels:
        return ""
    values = np.concatenate([np.asarray(lab).reshape(-1) for lab in labels])
    if not values.size:
        return ""
    rest = [int(d) for d in output_shape[1:] if int(d) != 1]
    classes = rest[0] if len(rest) == 1 and rest[0] > 1 else None
    low, high = int(values.min()), int(values.max())
    if classes is not None and (low < 0 or high >= classes):
        outside = sorted({int(v) for v in values if v < 0 or v >= classes})
        shown = ", ".join(str(v) for v in outside[:5]) + (", ..." if len(outside) > 5 else "")
        raise PlannerError(f"--val-data {folder}: labels {shown} are outside the model's {classes} classes "
                           f"(0 to {classes - 1})",
                           "label each sample with the index of its class in the model's output; a folder of class "
                           "sub-folders is labelled in sorted order of the sub-folder names, so name them so they "
                           "sort as the model's classes do (e.g. 0_cat, 1_dog)")
    if low == high:
        return (f"every one of the {values.size} labelled samples is class {low}: accuracy on them cannot tell the "
                "model from one that always answers that class, so accuracy drops judged on them are weak; add "
                "samples of the other classes")
    return ""


CALIBRATION_EVERY = 3
"""At most one validation sample in this many calibrates INT8 (the first of each); the others judge the candidates."""

CALIBRATION_SAMPLES = 64
"""About how many samples calibration needs: MinMax calibration reads only the activations' ranges, which a few
dozen samples set, while the judgement's accuracy interval narrows with every sample it keeps. A folder large
enough sets aside every k-th sample, k chosen so that about this many calibrate (every third at least): 60 of
demo:digits' 359 held-out digits (every sixth), leaving 299 to judge on rather than 239."""


def calibration_every(samples: int) -> int:
    """Every how many samples (or batches) one calibrates: at least every third, fewer where the folder is large."""
    return max(CALIBRATION_EVERY, math.ceil(samples / CALIBRATION_SAMPLES))

MIN_SPLIT_SAMPLES = 20
"""Below this many samples the folder is not split: a few samples set aside would leave the judgement fewer
still, so calibration and judgement share them, and the notes say so."""

Pair = tuple[Feed, "np.ndarray | None"]


@dataclass(frozen=True)
class ValSplit:
    """The validation data split once for every reader: what INT8 calibration sees and what the judgement sees.

    Deterministic (every `CALIBRATION_EVERY`-th sample, or batch, calibrates), so each worker process that
    reads the folder judges on the same rows as the plan, and the baseline's accuracy is worked out on the
    same rows as every candidate's (a paired comparison). `shared`: the folder was too small to split, and
    both parts are the whole folder.
    """

    calibration: tuple[Pair, ...]
    judged: tuple[Pair, ...]
    samples: int  # in the whole folder
    unit: str = "sample"  # what was dealt out: "sample" (rows within each batch) or "batch" (a fixed-batch model)
    shared: bool = False
    every: int = CALIBRATION_EVERY  # one sample (or batch) in this many calibrates

    @property
    def calibration_samples(self) -> int:
        """Samples set aside for calibration (all of them where the folder is shared)."""
        return sum(_rows(feed) for feed, _ in self.calibration)

    @property
    def judged_samples(self) -> int:
        """Samples the candidates and the original are judged on."""
        return sum(_rows(feed) for feed, _ in self.judged)

    def calibration_note(self, basis: str, *, used: int, batches: int) -> str:
        """What INT8 calibration saw, against what the judgement sees, in words: `used` samples in `batches`
        batches (calibration may take only the first batches of its part) of `basis` (the data, in words)."""
        counted = f"{batches} batch{'es' if batches != 1 else ''}"
        if self.shared:
            return (f"calibrated on {used} samples ({counted}) of {basis}: calibration and judgement share these "
                    f"samples, too few to set some aside (fewer than {MIN_SPLIT_SAMPLES} samples, or one batch), "
                    "so INT8 candidates are judged on samples calibration saw")
        ordinal = {2: "second", 3: "third"}.get(self.every, f"{self.every}th")
        aside = self.calibration_samples
        if used < aside:  # calibration took only its first batches
            counted += f", the first of the {aside} set aside"
        return (f"calibrated on {used} samples ({counted}) of the {self.samples} samples of {basis}, every "
                f"{ordinal} {self.unit} set aside for calibration; judged on the other {self.judged_samples}")


def split_val_data(folder: Path, *, inputs: ModelInputs | None = None,
                   options: "SampleOptions | None" = None) -> ValSplit:
    """The folder's (feed, labels) pairs split into a calibration part and a judged part (see `ValSplit`).

    Where every input may take any batch size, each batch is split by rows: a row calibrates when its place
    in the whole folder is a multiple of `CALIBRATION_EVERY`, so every batch (and, in a folder sorted by
    class, every class) gives some. A model compiled for one batch size keeps its batches whole, and every
    `CALIBRATION_EVERY`-th batch calibrates.
    """
    pairs = load_val_data(folder, inputs=inputs, options=options)
    return split_pairs(pairs, inputs=inputs)


def split_pairs(pairs: list[Pair], *, inputs: ModelInputs | None = None) -> ValSplit:
    """`split_val_data` on pairs already read."""
    samples = sum(_rows(feed) for feed, _ in pairs)
    by_rows = inputs is None or inputs.dynamic_batch
    if samples < MIN_SPLIT_SAMPLES or (not by_rows and len(pairs) < 2):
        return ValSplit(calibration=tuple(pairs), judged=tuple(pairs), samples=samples,
                        unit="sample" if by_rows else "batch", shared=True)
    if not by_rows:
        every = calibration_every(len(pairs))
        calibration = tuple(p for i, p in enumerate(pairs) if i % every == 0)
        judged = tuple(p for i, p in enumerate(pairs) if i % every != 0)
        return ValSplit(calibration=calibration, judged=judged, samples=samples, unit="batch", every=every)
    every = calibration_every(samples)
    calibration_rows: list[Pair] = []
    judged_rows: list[Pair] = []
    start = 0
    for feed, labels in pairs:
        rows = _rows(feed)
        aside = (start + np.arange(rows)) % every == 0
        start += rows
        for part, mask in ((calibration_rows, aside), (judged_rows, ~aside)):
            if mask.any():
                part.append(({name: a[mask] if np.ndim(a) else a for name, a in feed.items()},
                             labels[mask] if labels is not None else None))
    return ValSplit(calibration=tuple(calibration_rows), judged=tuple(judged_rows), samples=samples, every=every)


def _rows(feed: Feed) -> int:
    """A batch's samples: dimension 0 of its first input that has one (a scalar input has no rows)."""
    return next((len(a) for a in feed.values() if np.ndim(a)), 1)


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
