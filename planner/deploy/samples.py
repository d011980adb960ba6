"""samples.npz: a package's sample inputs and the ORIGINAL model's outputs on them, so verify can judge fidelity.

Keys: `input/<i>/<name>` for input `name` of sample `i` (in the model's input order) and `reference/<i>` for the
original's first output on it. The samples are the ones the plan compared candidates on, cut to the model's
batch: a candidate compiled for one shape runs them as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from planner.models.loaded import Feed
    from planner.models.spec import ModelInputs

SAMPLES_NAME = "samples.npz"
SAMPLE_LIMIT = 8
"""At most this many samples go into a package: enough to judge fidelity by, small enough to copy."""


def compared_feeds(inputs: "ModelInputs", *, val_data: Path | None, quick: bool) -> list["Feed"]:
    """The inputs the plan compared every candidate on (its validation data's judged part, else the generated
    fidelity inputs), in the order of the baseline's reference outputs."""
    if val_data is not None:
        from planner.models.valdata import split_val_data

        return [feed for feed, _ in split_val_data(Path(val_data), inputs=inputs).judged]
    from planner.measure.evaluate import fidelity_batch_count, fidelity_inputs

    return fidelity_inputs(inputs, count=fidelity_batch_count(quick))


def sample_rows(feeds: Sequence["Feed"], reference: Sequence[np.ndarray], *, batch: int,
                limit: int = SAMPLE_LIMIT) -> tuple[list["Feed"], list[np.ndarray]]:
    """(feeds, reference outputs) of `batch` rows each, at most `limit`: larger batches (validation data) are cut.

    A reference row belongs to the input row at the same position; a scalar input (a sample rate) has no
    rows and goes with every sample as it is. A last part shorter than `batch` is left out.
    """
    out_feeds: list[Feed] = []
    out_refs: list[np.ndarray] = []
    for feed, ref in zip(feeds, reference):
        rows = next((len(a) for a in feed.values() if np.ndim(a)), batch)
        for start in range(0, rows - batch + 1, batch):
            if len(out_feeds) == limit:
                return out_feeds, out_refs
            out_feeds.append({name: a[start:start + batch] if np.ndim(a) else a for name, a in feed.items()})
            out_refs.append(np.asarray(ref)[start:start + batch])
    return out_feeds, out_refs


def write_samples(path: Path, feeds: Sequence["Feed"], reference: Sequence[np.ndarray]) -> None:
    """Write the samples and reference outputs (uncompressed: the arrays are small and load fast)."""
    # Widened to Any: numpy's type hints bind a **mapping of arrays to savez's bool `allow_pickle` parameter.
    arrays: dict[str, Any] = {}
    for i, (feed, ref) in enumerate(zip(feeds, reference)):
        for name, array in feed.items():
            arrays[f"input/{i}/{name}"] = np.asarray(array)
        arrays[f"reference/{i}"] = np.asarray(ref)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def read_samples(path: Path) -> tuple[list[dict[str, np.ndarray]], list[np.ndarray]]:
    """(sample inputs, reference outputs) from samples.npz, in sample order."""
    feeds: dict[int, dict[str, np.ndarray]] = {}
    refs: dict[int, np.ndarray] = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            kind, index, *name = key.split("/", 2)
            if kind == "input" and name:
                feeds.setdefault(int(index), {})[name[0]] = data[key]
            elif kind == "reference":
                refs[int(index)] = data[key]
    order = sorted(feeds)
    return [feeds[i] for i in order], [refs[i] for i in order if i in refs]
