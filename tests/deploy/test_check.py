"""The package's fidelity rule: the plan's gate as numbers in the manifest (planner.deploy.rule), applied to the
package's few samples by the code run.py carries (planner.deploy.check)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.deploy.check import FAIL, NOT_ESTABLISHED, PASS, judge_package_outputs, wilson_interval
from planner.deploy.rule import fidelity_rule


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16", "int8", "ternary"])
def test_the_rule_carries_the_plans_gate_for_the_precision(precision):
    from planner.measure.fidelity import DEFAULT_GATES
    from planner.plugins import Precision

    gate = DEFAULT_GATES[Precision(precision)]
    rule = fidelity_rule(precision)
    shared = {"min_cosine", "min_top1", "max_spread_error", "max_relative_error", "interval_decides"}
    assert {k: rule[k] for k in shared} == {k: v for k, v in dataclasses.asdict(gate).items() if k in shared}
    assert (rule["exact_share"] is not None) == (precision == "fp32")  # only fp32 can be exact


@pytest.mark.parametrize(("successes", "n"), [(8, 8), (7, 8), (0, 5), (90, 100)])
def test_the_share_interval_is_the_plans_wilson_interval(successes, n):
    from planner.measure.intervals import wilson

    assert wilson_interval(successes, n) == pytest.approx(wilson(successes, n), abs=1e-9)


def _scores(rng, n: int = 8, classes: int = 10) -> list[np.ndarray]:
    """Class scores with a clear winner per sample (a trained classifier's)."""
    return [rng.normal(size=(1, classes)) + 6.0 * np.eye(classes)[[i % classes]] for i in range(n)]


def test_eight_agreeing_samples_pass_an_int8_package_that_they_could_not_establish_alone():
    reference = _scores(np.random.default_rng(0))
    outputs = [r + 0.01 for r in reference]
    verdict, words, figures = judge_package_outputs(reference, outputs, fidelity_rule("int8"))
    assert verdict == PASS and figures["top1_agreement"] == 1.0
    assert "top-1 agreement 100.0% (8 of 8), 95% interval 67.6% to 100.0% (gate 90%)" in words


def _swap_top_two(scores: np.ndarray) -> np.ndarray:
    """The scores with their two highest classes swapped: the top-1 flips, little else changes."""
    flipped = scores.copy()
    first, second = np.argsort(flipped[0])[-1], np.argsort(flipped[0])[-2]
    flipped[0, [first, second]] = flipped[0, [second, first]]
    return flipped


def test_int8_top1_fails_only_when_its_interval_lies_below_the_gate():
    reference = _scores(np.random.default_rng(1), classes=4000)  # many classes: a flip barely moves the cosine
    one = [_swap_top_two(r) if i == 0 else r for i, r in enumerate(reference)]
    verdict, words, _ = judge_package_outputs(reference, one, fidelity_rule("int8"))
    assert verdict == PASS and "top-1 agreement 87.5% (7 of 8), 95% interval 52.9% to 97.8% (gate 90%)" in words
    six = [_swap_top_two(r) if i < 6 else r for i, r in enumerate(reference)]
    verdict, words, _ = judge_package_outputs(reference, six, fidelity_rule("int8"))
    assert verdict == FAIL
    assert words.startswith("top-1 agreement 25.0% (2 of 8), 95% interval 7.1% to 59.1% < gate 90%")
    # fp32 keeps the arithmetic: one flip is already too far from the original.
    assert judge_package_outputs(reference, one, fidelity_rule("fp32"))[0] == FAIL


def test_outputs_of_another_shape_or_not_finite_fail():
    reference = _scores(np.random.default_rng(2))
    assert judge_package_outputs(reference, [r[:, :5] for r in reference], fidelity_rule("fp32"))[0] == FAIL
    broken = [r.copy() for r in reference]
    broken[3][0, 0] = np.nan
    verdict, words, _ = judge_package_outputs(reference, broken, fidelity_rule("fp32"))
    assert verdict == FAIL and "not finite" in words


def test_outputs_that_barely_depend_on_the_input_are_exact_in_fp32_and_not_established_otherwise():
    rng = np.random.default_rng(3)
    shared = rng.normal(size=(1, 10))
    reference = [shared + 1e-7 * rng.normal(size=(1, 10)) for _ in range(8)]
    same = [r + 1e-10 for r in reference]
    verdict, words, _ = judge_package_outputs(reference, same, fidelity_rule("fp32"))
    assert verdict == PASS and words.startswith("exact to rounding")
    noisy = [r + 1e-3 * rng.normal(size=(1, 10)) for r in reference]
    verdict, words, _ = judge_package_outputs(reference, noisy, fidelity_rule("int8"))
    assert verdict == NOT_ESTABLISHED and words.startswith("cannot judge: the outputs barely depend on the input")


def test_each_output_kind_is_judged_by_its_own_measure():
    rng = np.random.default_rng(4)
    values = [rng.normal(size=(1, 3)) for _ in range(8)]
    off = [v * 1.05 for v in values]  # 5% relative error: within INT8's 10%, beyond fp32's 1%
    assert judge_package_outputs(values, off, fidelity_rule("int8", output_kind="regression"))[0] == PASS
    assert judge_package_outputs(values, off, fidelity_rule("fp32", output_kind="regression"))[0] == FAIL
    maps = [rng.uniform(size=(1, 1, 4, 4)) for _ in range(8)]
    verdict, words, _ = judge_package_outputs(maps, [m + 0.2 for m in maps], fidelity_rule("int8", output_kind="dense"))
    assert verdict == FAIL and "on the probability scale" in words
    vectors = [v / np.linalg.norm(v) for v in (rng.normal(size=(1, 16)) for _ in range(8))]
    verdict, words, _ = judge_package_outputs(vectors, vectors, fidelity_rule("fp32", output_kind="embedding"))
    assert verdict == PASS and words.startswith("cosine per sample 1.0000")


def test_a_candidate_judged_on_accuracy_by_design_keeps_no_output_gate():
    """The plan judged a pruned model by accuracy on labels alone; the package's samples have none."""
    reference = _scores(np.random.default_rng(5))
    pruned = [r * 0.5 + 0.3 for r in reference]
    rule = fidelity_rule("fp32", changes_function=True, judged_by_accuracy=True)
    assert judge_package_outputs(reference, pruned, rule)[0] == PASS
    assert judge_package_outputs(reference, pruned, fidelity_rule("fp32"))[0] == FAIL
