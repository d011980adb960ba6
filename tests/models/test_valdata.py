"""--val-data folders: .npy batches for one input, .npz batches for several, labels beside them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner.errors import PlannerError
from planner.models.spec import ModelInputs, TensorSpec, parse_input
from planner.models.valdata import check_labels, labels_of, load_val_data, split_val_data

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


IMAGE = ModelInputs((parse_input("x:1x3x4x4"),))


def _image_batches(folder: Path, sizes: list[int]) -> np.ndarray:
    """Batches of `sizes` rows whose first pixel is the row's place in the folder, with labels = that place."""
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for i, rows in enumerate(sizes):
        x = np.zeros((rows, 3, 4, 4), np.float32)
        x[:, 0, 0, 0] = np.arange(start, start + rows)
        np.save(folder / f"b{i}.npy", x)
        np.save(folder / f"b{i}_labels.npy", np.arange(start, start + rows))
        start += rows
    return np.arange(start)


def _places(pairs) -> list[int]:
    return [int(v) for feed, _ in pairs for v in feed["x"][:, 0, 0, 0]]


def test_calibration_and_judgement_get_disjoint_rows_of_every_batch(tmp_path: Path) -> None:
    every = _image_batches(tmp_path, [64, 64, 64, 64, 64, 39])  # demo:digits' 359 held-out samples
    split = split_val_data(tmp_path, inputs=IMAGE)
    calibrated, judged = _places(split.calibration), _places(split.judged)
    assert not set(calibrated) & set(judged) and sorted(calibrated + judged) == every.tolist()
    assert (split.calibration_samples, split.judged_samples, split.samples) == (60, 299, 359)
    assert len(split.calibration) == len(split.judged) == 6  # every batch gives some to each part
    # Labels travel with their rows, and labels_of gives the judged part's.
    assert all((lab == feed["x"][:, 0, 0, 0]).all() for feed, lab in (*split.calibration, *split.judged))
    assert np.concatenate(labels_of(tmp_path, inputs=IMAGE)).tolist() == judged
    # The same folder splits the same way in every process that reads it.
    assert _places(split_val_data(tmp_path, inputs=IMAGE).judged) == judged


def test_a_fixed_batch_model_keeps_its_batches_whole(tmp_path: Path) -> None:
    fixed = ModelInputs((TensorSpec(name="x", shape=(8, 3, 4, 4), axes=("", "", "", "")),))  # compiled for batch 8
    _image_batches(tmp_path, [8] * 6)
    split = split_val_data(tmp_path, inputs=fixed)
    assert split.unit == "batch" and not split.shared
    assert [len(f["x"]) for f, _ in split.calibration] == [8, 8] and split.judged_samples == 32


def test_a_folder_too_small_to_split_is_shared_and_says_so(tmp_path: Path) -> None:
    _image_batches(tmp_path, [12])
    split = split_val_data(tmp_path, inputs=IMAGE)
    assert split.shared and split.calibration == split.judged and split.judged_samples == 12
    note = split.calibration_note("--val-data", used=12, batches=1)
    assert "calibration and judgement share these samples" in note and "judged on samples calibration saw" in note


def test_int8_calibration_reads_the_calibration_part_and_its_note_gives_the_counts(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from planner.measure.evaluate import _val_or_fidelity_inputs
    from planner.onnx.quantize import calibration_inputs

    _image_batches(tmp_path, [64, 64, 64, 64, 64, 39])
    ctx = SimpleNamespace(quick=True, val_data=tmp_path, val_data_basis="the digits demo's held-out set",
                          model=SimpleNamespace(inputs=IMAGE))
    feeds, note = calibration_inputs(ctx)
    split = split_val_data(tmp_path, inputs=IMAGE)
    assert _places([(f, None) for f in feeds]) == _places(split.calibration)
    assert note == ("calibrated on 60 samples (6 batches) of the 359 samples of the digits demo's held-out set, "
                    "every 6th sample set aside for calibration; judged on the other 299")
    # The measuring worker compares the original and every candidate on the judged part only.
    job = SimpleNamespace(val_data=str(tmp_path), fidelity_batches=8)
    judged = _val_or_fidelity_inputs(job, IMAGE)  # type: ignore[arg-type]
    assert _places([(f, None) for f in judged]) == _places(split.judged)


def test_calibration_that_takes_its_first_batches_says_how_many_were_set_aside(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from planner.onnx.quantize import calibration_inputs

    _image_batches(tmp_path, [30] * 10)
    ctx = SimpleNamespace(quick=True, val_data=tmp_path, val_data_basis="--val-data",
                          model=SimpleNamespace(inputs=IMAGE))
    feeds, note = calibration_inputs(ctx)
    assert len(feeds) == 8 and note.startswith("calibrated on 48 samples (8 batches, the first of the 60 set aside) "
                                               "of the 300 samples of --val-data")
