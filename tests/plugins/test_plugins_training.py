"""The labelled data the training plugins share: where it comes from, and a clear error without labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hardware_profiles import two_core_x86

from planner.plugins import PlanContext
from planner.plugins.training import FinetuneError, held_out_data, training_data


def _folder(path: Path, *, labels: bool) -> Path:
    path.mkdir()
    for i in range(2):
        np.save(path / f"b{i}.npy", np.full((4, 3, 32, 32), i, dtype=np.float32))
        if labels:
            np.save(path / f"b{i}_labels.npy", np.full(4, i, dtype=np.int64))
    return path


def test_labelled_val_data_is_stacked_for_training_and_judging(tiny, tmp_path: Path) -> None:
    ctx = PlanContext(hw=two_core_x86(), model=tiny, workdir=tmp_path, quick=True,
                      val_data=_folder(tmp_path / "val", labels=True))
    x, y, basis = training_data(ctx)
    assert x.shape == (8, 3, 32, 32) and list(y) == [0] * 4 + [1] * 4
    assert "optimistic" in basis  # trained and judged on the same data
    held = held_out_data(ctx)
    assert held is not None and held[0].shape == (8, 3, 32, 32)


def test_without_labels_training_says_what_to_pass_and_judging_falls_back(tiny, tmp_path: Path) -> None:
    ctx = PlanContext(hw=two_core_x86(), model=tiny, workdir=tmp_path, quick=True,
                      val_data=_folder(tmp_path / "val", labels=False))
    with pytest.raises(FinetuneError, match="ternary-aware fine-tuning needs labelled data") as err:
        training_data(ctx, what="ternary-aware fine-tuning")
    assert "--val-data" in err.value.fix
    assert held_out_data(ctx) is None
