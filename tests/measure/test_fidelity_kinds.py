"""Outputs judged by what they are: class scores, a dense map, a sequence of class scores, or numbers."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from planner.codec import from_data, to_data
from planner.errors import PlannerError
from planner.measure.fidelity import (
    DEFAULT_GATES,
    OutputKind,
    compare,
    infer_kind,
    kind_of_model,
    output_names,
    resolve_output_kind,
)
from planner.plugins import Precision
from planner.results.values import Fidelity

BF16 = DEFAULT_GATES[Precision.BF16]
FP32 = DEFAULT_GATES[Precision.FP32]


@pytest.mark.parametrize(("shape", "kind"), [
    ((8, 10), OutputKind.CLASSES),
    ((8, 1000, 1, 1), OutputKind.CLASSES),  # a 1x1 conv head
    ((8, 1, 64, 64), OutputKind.DENSE),
    ((8, 21, 32, 32), OutputKind.DENSE),
    ((8, 40, 12), OutputKind.SEQUENCE),
    ((8, 1), OutputKind.REGRESSION),
    ((8,), OutputKind.REGRESSION),
    ((8, 3, 4, 5, 6), OutputKind.REGRESSION),
])
def test_kind_is_read_from_the_shape(shape, kind):
    assert infer_kind(shape) is kind


def _near_zero_map(rng: np.random.Generator) -> np.ndarray:
    # A detector's sigmoid map on generated inputs: ~1e-7 everywhere, nowhere near the 0.5 threshold.
    return 1.0 / (1.0 + np.exp(-(-16.0 + rng.normal(0, 0.3, size=(8, 1, 32, 32)))))


def test_a_near_zero_map_with_tiny_error_is_not_failed_on_its_poor_cosine_and_cannot_be_judged():
    rng = np.random.default_rng(0)
    ref = _near_zero_map(rng)
    out = ref * (1.0 + rng.normal(0, 0.6, size=ref.shape))  # 60% relative noise on values of ~1e-7
    fid = compare([ref[:4], ref[4:]], [out[:4], out[4:]])
    assert fid.output_kind == "dense" and fid.kind_basis.startswith("read from the output's shape (batch, 1, 32, 32)")
    assert fid.cosine < BF16.min_cosine  # what rejected this candidate when every output was judged as a vector
    assert fid.mean_abs_error < 1e-6 and fid.top1_agreement is None and fid.top5_agreement is None
    assert fid.map_threshold == 0.5 and fid.map_iou is None and fid.spread_basis == "probability"
    why, decided_by = BF16.judge(fid)
    assert why == ""
    # Nothing on these inputs could fail a candidate (no foreground to find or miss): it cannot be judged.
    assert fid.cannot_judge.startswith("the map has no foreground on these inputs")
    assert decided_by.startswith("cannot judge: the map has no foreground on these inputs")
    assert "on the probability scale" in decided_by
    # The same numbers judged as class scores (as results written before kinds are) fail on cosine.
    assert BF16.judge(dataclasses.replace(fid, output_kind=""))[0].startswith("cosine similarity")


def _page(rng: np.random.Generator) -> np.ndarray:
    ref = np.full((4, 1, 32, 32), 0.02) + rng.uniform(0, 0.01, size=(4, 1, 32, 32))
    ref[:, :, 8:24, 8:24] = 0.9  # text regions well above the threshold
    return ref


def test_a_map_whose_foreground_flips_fails():
    rng = np.random.default_rng(1)
    ref = _page(rng)
    out = ref.copy()
    out[:, :, 8:24, 8:16] = 0.1  # half of every region drops below the threshold
    fid = compare([ref], [out])
    assert fid.map_iou == pytest.approx(0.5)
    why, decided_by = BF16.judge(fid)
    assert why.startswith("the map thresholded at 0.5 agrees with the original's at foreground IoU 0.50 < gate 0.95")
    assert decided_by.startswith("agreement of the map thresholded at 0.5 (foreground IoU 0.50 over 4 samples, "
                                 "needed 0.95)")


def test_a_map_that_keeps_its_foreground_passes_with_its_iou():
    rng = np.random.default_rng(2)
    ref = _page(rng)
    out = ref + rng.normal(0, 1e-3, size=ref.shape)
    fid = compare([ref], [out])
    assert fid.map_iou == 1.0 and fid.top1_agreement is None
    why, decided_by = BF16.judge(fid)
    assert why == "" and "foreground IoU 1.00 over 4 samples, needed 0.95" in decided_by


def test_a_map_whose_values_drift_fails_on_its_error_even_without_foreground():
    rng = np.random.default_rng(3)
    ref = _near_zero_map(rng)
    out = ref + 0.2  # background lifted to 0.2: no pixel crosses 0.5, but the map is wrong
    why, _ = BF16.judge(compare([ref], [out]))
    assert why.startswith("mean error 0.2 on the probability scale > gate 0.05")


def test_an_unbounded_map_is_thresholded_at_zero_and_its_error_is_relative_to_its_spread():
    rng = np.random.default_rng(4)
    ref = rng.normal(0, 3, size=(2, 1, 16, 16))
    fid = compare([ref], [ref + rng.normal(0, 0.01, size=ref.shape)])
    assert fid.map_threshold == 0.0 and fid.spread_basis == "spread"
    assert fid.spread_error is not None and fid.spread_error < 0.01
    assert fid.map_iou is not None and fid.map_iou > 0.99


def test_a_segmentation_map_is_judged_by_per_pixel_class():
    rng = np.random.default_rng(5)
    ref = rng.normal(0, 1, size=(2, 5, 8, 8))
    ref[:, 2] += 8.0  # class 2 wins every pixel by a wide margin
    out = ref.copy()
    out[0, 2, :4, :] -= 20.0  # the candidate gives a quarter of the pixels another class
    fid = compare([ref], [out])
    assert fid.pixel_agreement == pytest.approx(0.75) and fid.map_iou is None
    why, _ = BF16.judge(fid)
    assert why.startswith("per-pixel class agreement 75.0% < gate 95%")


def _sequence(rng: np.random.Generator) -> np.ndarray:
    ref = rng.normal(0, 1, size=(4, 10, 12))
    winners = rng.integers(0, 12, size=(4, 10))
    np.put_along_axis(ref, winners[..., None], 6.0, axis=2)  # each position's class stands clear
    return ref


def test_a_sequence_with_flipped_positions_fails():
    rng = np.random.default_rng(6)
    ref = _sequence(rng)
    out = ref.copy()
    for b, t in ((0, 1), (1, 5), (3, 9)):  # 3 of 40 positions read another class
        out[b, t, ref[b, t].argmax()] = -6.0
    fid = compare([ref], [out])
    assert fid.output_kind == "sequence" and fid.top1_agreement is None
    assert fid.position_agreement == pytest.approx(37 / 40) and fid.agreement_counted == 40
    # Three of the four sequences read differently somewhere: the whole sequences fail first, in those words.
    assert fid.sequences == 4 and fid.sequences_unchanged == pytest.approx(0.25)
    assert fid.edit_rate == pytest.approx(3 / 40)
    why, decided_by = BF16.judge(fid)
    assert why == "whole sequences unchanged 25.0% (95% interval 4.6% to 69.9%; 7.50% of positions edited) < gate 95%"
    assert "7.50% of positions edited" in why
    assert decided_by.startswith("whole sequences unchanged 25.0%") and "over 4 sequences" in decided_by
    assert BF16.judge(compare([ref], [ref + 1e-4]))[0] == ""


def test_positions_decide_when_every_sequence_has_a_near_tie():
    rng = np.random.default_rng(6)
    ref = _sequence(rng)
    ref[:, 0, :2] = 7.0  # a tie at each sequence's first position: no whole sequence is a test
    out = ref.copy()
    for b, t in ((0, 1), (1, 5), (3, 9)):
        out[b, t, ref[b, t].argmax()] = -6.0
    fid = compare([ref], [out])
    assert fid.sequences is None and fid.sequences_unchanged is None
    why, decided_by = BF16.judge(fid)
    assert why.startswith("per-position class agreement 91.7% < gate 95% (over the 36 of 40 positions")
    assert decided_by.startswith("per-position class agreement 91.7% on 36 of 40 positions over 4 samples")


def test_classes_keep_top1_and_add_top5():
    rng = np.random.default_rng(7)
    ref = rng.normal(0, 3, size=(16, 20))
    out = ref + rng.normal(0, 1e-3, size=ref.shape)
    fid = compare([ref], [out])
    assert fid.output_kind == "classes" and fid.top1_agreement == 1.0 and fid.top5_agreement == 1.0
    assert fid.map_iou is None and fid.position_agreement is None
    assert BF16.judge(fid) == ("", "top-1 agreement on 16 of 16 samples (gate 90%); cosine of the part that "
                                   "depends on the input (outputs minus the original's mean output over the 16 "
                                   f"samples) {fid.centered_cosine:.5f} (gate 0.995)")
    assert compare([ref[:, :5]], [out[:, :5]]).top5_agreement is None  # 5 classes: top-5 is every class


def test_regression_is_judged_by_relative_error():
    rng = np.random.default_rng(8)
    ref = rng.normal(0, 10, size=(16, 1))
    fid = compare([ref], [ref * 1.02])
    assert fid.output_kind == "regression" and fid.top1_agreement is None
    assert fid.relative_error == pytest.approx(0.02)
    assert BF16.judge(fid)[0] == ""
    why, decided_by = FP32.judge(fid)
    assert why.startswith("relative error ||a - b|| / ||a|| 0.02 > gate 0.01")


def test_the_kind_given_overrides_the_shape():
    rng = np.random.default_rng(9)
    ref = rng.normal(0, 1, size=(2, 1, 8, 8))
    fid = compare([ref], [ref], kind="regression", kind_basis="given with --output-kind maps=regression")
    assert fid.output_kind == "regression" and fid.map_iou is None and fid.map_threshold is None
    assert fid.kind_basis == "given with --output-kind maps=regression"
    with pytest.raises(ValueError, match="a sequence is"):
        compare([ref], [ref], kind=OutputKind.SEQUENCE)


def test_labels_count_only_for_class_scores():
    rng = np.random.default_rng(10)
    ref = _sequence(rng)
    fid = compare([ref], [ref], labels=[np.zeros(4)])
    assert fid.accuracy is None and fid.reference_accuracy is None


def test_output_kind_names_the_compared_output():
    names = ["maps", "features"]
    assert resolve_output_kind([], names) is None
    assert resolve_output_kind(["maps=dense"], names) == (OutputKind.DENSE, "given with --output-kind maps=dense")
    assert resolve_output_kind(["0=Sequence"], names) == (OutputKind.SEQUENCE,
                                                           "given with --output-kind 0=sequence")
    with pytest.raises(PlannerError, match="no output named 'logits'") as err:
        resolve_output_kind(["logits=classes"], names)
    assert "maps (compared), features" in str(err.value)
    with pytest.raises(PlannerError, match="only the first output, 'maps', is compared"):
        resolve_output_kind(["features=regression"], names)
    with pytest.raises(PlannerError, match="unknown kind 'heatmap'"):
        resolve_output_kind(["maps=heatmap"], names)
    with pytest.raises(PlannerError, match="is not NAME=KIND"):
        resolve_output_kind(["dense"], names)


def test_output_names_come_from_the_onnx_graph(tmp_path):
    from trait_models import dense_map_model

    path = dense_map_model(tmp_path / "det.onnx")
    assert output_names(SimpleNamespace(module=None, onnx_path=path)) == ["maps"]
    assert output_names(SimpleNamespace(module=object(), onnx_path=None)) == ["output"]


def test_a_kind_the_output_cannot_have_is_refused_before_measuring(tmp_path):
    from trait_models import sequence_model

    model = SimpleNamespace(module=None, onnx_path=sequence_model(tmp_path / "rec.onnx"), output_shape=(1, 40, 12))
    given = (OutputKind.SEQUENCE, "given with --output-kind scores=sequence")
    assert kind_of_model(["scores=sequence"], model) == given
    with pytest.raises(PlannerError, match=r"a dense output is \(batch, channels, height, width\), and this one is "
                                           r"\(batch, 40, 12\)") as err:
        kind_of_model(["scores=dense"], model)
    assert "it reads sequence" in err.value.fix


def test_new_fields_round_trip_and_old_files_still_load():
    rng = np.random.default_rng(11)
    ref = _page(rng)
    fid = compare([ref], [ref])
    assert from_data(to_data(fid), Fidelity) == fid
    old = {"cosine": 0.999, "max_abs_error": 0.1, "mean_abs_error": 0.01, "top1_agreement": 1.0, "samples": 8}
    loaded = from_data(old, Fidelity)
    assert loaded.output_kind == "" and loaded.map_iou is None
    assert BF16.judge(loaded)[1] == "top-1 agreement on 8 of 8 samples (gate 90%)"
