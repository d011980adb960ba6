"""Fidelity on the part of the output that depends on the input: a candidate whose outputs share the original's
constant part but get the input-dependent part wrong fails; outputs that barely depend on the input cannot be
judged, and such a candidate is never called passed."""

from __future__ import annotations

import numpy as np
import pytest

from planner.measure.fidelity import DEFAULT_GATES, MIN_INPUT_SPREAD, compare, judge_outputs
from planner.plugins import Precision
from planner.plugins.gate import Verdict

INT8 = DEFAULT_GATES[Precision.INT8]
BF16 = DEFAULT_GATES[Precision.BF16]


def _constant_dominated(rng: np.random.Generator, samples: int = 16, classes: int = 10,
                        level: float = 50.0) -> np.ndarray:
    """Class scores like a random-weight network's: one large shared vector, plus a part that varies by input."""
    shared = rng.normal(0, 1, size=classes)
    shared[0] = 4.0  # the same class wins every input by a wide margin
    return level * shared + rng.normal(0, 1, size=(samples, classes))


def test_a_wrong_input_dependent_part_fails_though_the_raw_cosine_and_top1_pass():
    rng = np.random.default_rng(0)
    ref = _constant_dominated(rng)
    # The candidate keeps the shared part and answers every input with someone else's variation.
    out = ref - (ref - ref.mean(axis=0)) + rng.normal(0, 1, size=ref.shape)
    fid = compare([ref], [out])
    assert 0.005 < (fid.input_spread or 0) < 0.05
    assert fid.cosine > INT8.min_cosine and fid.top1_agreement == 1.0  # what used to pass it
    assert fid.centered_cosine is not None and fid.centered_cosine < 0.3
    assert fid.centered_error is not None and fid.centered_error > 1.0
    why, decided_by = INT8.judge(fid)
    assert why.startswith("cosine of the part that depends on the input (outputs minus the original's mean "
                          "output over the 16 samples)")
    assert why.endswith("< gate 0.99") and decided_by.endswith("(gate 0.99)")


def test_an_input_dependent_part_kept_passes_on_both_tests():
    rng = np.random.default_rng(1)
    ref = _constant_dominated(rng)
    out = ref + rng.normal(0, 0.02, size=ref.shape)  # 2% of the part that varies
    fid = compare([ref], [out])
    assert fid.centered_cosine is not None and fid.centered_cosine > 0.999
    why, decided_by = INT8.judge(fid)
    assert why == "" and fid.cannot_judge == ""
    assert "top-1 agreement on 16 of 16 samples" in decided_by and "cosine of the part that depends" in decided_by


def test_regression_with_a_wrong_input_dependent_part_fails_on_the_error_over_that_part():
    rng = np.random.default_rng(2)
    ref = 100.0 + rng.normal(0, 1, size=(16, 1))
    out = 100.0 + rng.normal(0, 1, size=(16, 1))  # within 2% of each value, and unrelated to the input
    fid = compare([ref], [out])
    assert fid.output_kind == "regression" and (fid.relative_error or 1) < BF16.max_relative_error
    why, _ = BF16.judge(fid)
    assert why.startswith("error over the size of the part that depends on the input")
    assert "> gate 0.05" in why


def test_ordinary_outputs_pass_and_fail_as_before():
    rng = np.random.default_rng(3)
    ref = rng.normal(0, 3, size=(32, 100))
    assert INT8.judge(compare([ref], [ref + rng.normal(0, 0.01, size=ref.shape)]))[0] == ""
    assert INT8.judge(compare([ref], [rng.normal(0, 3, size=ref.shape)]))[0].startswith("cosine similarity")


@pytest.mark.parametrize("spread", [4e-6, 1e-4])
def test_outputs_that_barely_depend_on_the_input_cannot_be_judged(spread):
    rng = np.random.default_rng(4)
    shared = rng.normal(0, 1, size=10)
    ref = shared + spread * rng.normal(0, 1, size=(8, 10)) * np.linalg.norm(shared) / np.sqrt(10)
    out = np.repeat(ref.mean(axis=0, keepdims=True), 8, axis=0)  # ignores its input altogether
    fid = compare([ref], [out])
    assert fid.input_spread is not None and fid.input_spread < MIN_INPUT_SPREAD
    assert fid.cosine > 0.9999  # the raw cosine passes a candidate that ignores its input
    why, decided_by = INT8.judge(fid)
    assert why == ""
    assert decided_by.startswith("cannot judge: the model's outputs barely depend on its inputs (random weights?)")
    assert f"below the {MIN_INPUT_SPREAD:g}" in decided_by


def test_a_map_with_no_foreground_cannot_be_judged_and_one_with_foreground_can():
    rng = np.random.default_rng(5)
    empty = 1.0 / (1.0 + np.exp(16.0 - rng.normal(0, 1.0, size=(4, 1, 16, 16))))  # near zero everywhere
    fid = compare([empty], [empty * 1.01])
    assert fid.cannot_judge.startswith("the map has no foreground on these inputs")
    assert INT8.judge(fid) == ("", INT8.judge(fid)[1]) and INT8.judge(fid)[1].startswith("cannot judge")
    page = np.full((4, 1, 16, 16), 0.05) + rng.uniform(0, 0.01, size=(4, 1, 16, 16))
    for i in range(4):
        page[i, :, 2 * i:2 * i + 6, 4:12] = 0.9  # text whose place depends on the input
    fid = compare([page], [page + 1e-3])
    assert fid.cannot_judge == "" and INT8.judge(fid)[0] == ""


def test_outputs_that_are_zero_everywhere_cannot_be_judged():
    zero = np.zeros((4, 10))
    fid = compare([zero], [zero])
    assert fid.cannot_judge == "the model's outputs are zero on every input used"
    assert INT8.judge(fid)[1].startswith("cannot judge")


def test_labels_still_decide_by_accuracy_where_outputs_barely_depend_on_the_input():
    ref = np.array([[2.0, 0.0], [2.0, 1e-7], [2.0, 0.0], [2.0, 2e-7]])
    fid = compare([ref], [ref], labels=[np.array([0, 0, 0, 1])])
    assert fid.cannot_judge == "" and fid.input_spread is not None and fid.input_spread < MIN_INPUT_SPREAD
    why, decided_by = INT8.judge(fid)
    assert why == "" and decided_by.startswith("accuracy on 4 labelled samples")


def _flat() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(6)
    shared = rng.normal(0, 1, size=(1, 10))
    return [shared + 1e-6 * rng.normal(0, 1, size=(8, 10))], [np.repeat(shared, 8, axis=0)]


def test_judge_outputs_keeps_a_lower_precision_undecided_and_never_a_plugin_pass():
    reference, ignoring = _flat()
    why, decided_by, fid = judge_outputs(reference, ignoring, precision="int8")
    assert why == "" and fid is not None and fid.cannot_judge
    verdict = Verdict(why=why, decided_by=decided_by, fidelity=fid, data="generated inputs")
    assert verdict.undecided and not verdict.passed
    assert "cannot judge" in verdict.line() and "passes" not in verdict.line()


def test_an_exact_fp32_candidate_is_judged_exact_and_one_that_ignores_its_input_is_not():
    reference, ignoring = _flat()
    why, decided_by, fid = judge_outputs(reference, [reference[0].copy()], precision="fp32")
    assert why == "" and fid is not None and fid.cannot_judge == ""
    assert decided_by.startswith("exact to rounding: its error is 0 of the part that depends on the input")
    assert Verdict(why=why, decided_by=decided_by, fidelity=fid, data="generated inputs").passed
    why, decided_by, fid = judge_outputs(reference, ignoring, precision="fp32")
    assert why == "" and fid is not None and fid.cannot_judge and decided_by.startswith("cannot judge")
    # A function change (pruning, low rank) at fp32 is not exact by design: it cannot be judged either.
    why, _, fid = judge_outputs(reference, [reference[0].copy()], precision="fp32", changes_function=True)
    assert why == "" and fid is not None and fid.cannot_judge


def test_new_fields_have_defaults_so_older_files_still_load():
    from planner.codec import from_data, to_data
    from planner.results.values import Fidelity

    old = {"cosine": 0.99, "max_abs_error": 0.1, "mean_abs_error": 0.01, "top1_agreement": 1.0, "samples": 8}
    fid = from_data(old, Fidelity)
    assert fid.input_spread is None and fid.centered_cosine is None and fid.cannot_judge == ""
    new = compare([np.eye(4)], [np.eye(4)])
    assert from_data(to_data(new), Fidelity) == new
