"""--val-data folders: .npy batches for one input, .npz batches for several, labels beside them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner.errors import PlannerError
from planner.models.spec import ModelInputs, parse_input
from planner.models.valdata import check_labels, labels_of, load_val_data

TEXT = ModelInputs((parse_input("input_ids:1x8:int64"), parse_input("attention_mask:1x8:int64")))


def test_npz_batches_feed_every_input_by_name(tmp_path: Path) -> None:
    ids = np.arange(16, dtype=np.int64).reshape(2, 8)
    np.savez(tmp_path / "b0.npz", attention_mask=np.ones((2, 8), np.int64), input_ids=ids)
    np.save(tmp_path / "b0_labels.npy", np.array([1, 0]))
    [(feed, labels)] = load_val_data(tmp_path, inputs=TEXT)
    assert list(feed) == ["input_ids", "attention_mask"]  # the model's order, not the file's
    assert (feed["input_ids"] == ids).all() and labels.tolist() == [1, 0]
    assert [lab.tolist() for lab in labels_of(tmp_path)] == [[1, 0]]


def test_npz_missing_an_input_says_which(tmp_path: Path) -> None:
    np.savez(tmp_path / "b0.npz", input_ids=np.zeros((2, 8), np.int64))
    with pytest.raises(PlannerError, match="no array for input attention_mask"):
        load_val_data(tmp_path, inputs=TEXT)


def test_npy_for_a_two_input_model_asks_for_npz(tmp_path: Path) -> None:
    np.save(tmp_path / "b0.npy", np.zeros((2, 8), np.int64))
    with pytest.raises(PlannerError) as err:
        load_val_data(tmp_path, inputs=TEXT)
    assert "numpy.savez" in err.value.fix and "attention_mask=" in err.value.fix


def test_wrong_shape_names_the_input(tmp_path: Path) -> None:
    np.savez(tmp_path / "b0.npz", input_ids=np.zeros((2, 9), np.int64), attention_mask=np.ones((2, 8), np.int64))
    with pytest.raises(PlannerError, match="input input_ids has shape 2x9, but the model takes Bx8"):
        load_val_data(tmp_path, inputs=TEXT)


def test_labels_outside_the_models_classes_are_refused_before_measuring(tmp_path: Path) -> None:
    labels = [np.array([0, 3, 9]), np.array([12, -1])]
    with pytest.raises(PlannerError) as err:
        check_labels(tmp_path, labels, (1, 10))
    assert "labels -1, 12 are outside the model's 10 classes (0 to 9)" in str(err.value)
    assert "sub-folder names" in err.value.fix


def test_a_folder_of_one_class_is_said_and_other_outputs_are_not_checked(tmp_path: Path) -> None:
    warning = check_labels(tmp_path, [np.array([4, 4]), np.array([4])], (1, 10))
    assert warning.startswith("every one of the 3 labelled samples is class 4")
    assert check_labels(tmp_path, [np.array([0, 4])], (1, 10)) == ""
    assert check_labels(tmp_path, None, (1, 10)) == ""
    assert check_labels(tmp_path, [np.array([0, 40])], (1, 3, 16, 16)) == ""  # a map: labels do not count there
