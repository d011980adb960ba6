"""An accuracy drop is judged on its 95% interval: met only when the interval clears the budget, missed only when
it lies beyond, otherwise not established, with how many labelled samples would settle it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.advice.requirements import evaluate, load_requirements
from planner.codec import to_data
from planner.measure.fidelity import judge_outputs
from planner.measure.intervals import paired_drop, samples_to_settle, wilson
from planner.results.decisions import CheckStatus


def _scores(labels: np.ndarray, classes: int = 10) -> np.ndarray:
    """Class scores that pick `labels`, with a clear margin."""
    out = np.zeros((len(labels), classes))
    out[np.arange(len(labels)), labels] = 5.0
    return out


def _int8_like(ref: np.ndarray, wrong: int) -> np.ndarray:
    """The reference's scores with a little noise (not exact: a lower precision), and `wrong` samples flipped."""
    out = ref + np.random.default_rng(0).normal(0, 0.05, size=ref.shape)
    out[:wrong] = np.roll(out[:wrong], 1, axis=1)
    return out


def test_wilson_and_the_paired_interval_of_a_drop() -> None:
    low, high = wilson(24, 24)
    assert high == pytest.approx(1.0) and low == pytest.approx(0.862, abs=1e-3)
    same = np.ones(24, bool)
    drop, low, high = paired_drop(same, same)
    # 24 samples that all agree cannot say the drop is under 1%: about +-14 points (the "about +-15").
    assert drop == 0 and high == pytest.approx(0.138, abs=2e-3) and low == pytest.approx(-high)
    assert samples_to_settle(drop, low, high, 0.01, 24) > 4000
    assert samples_to_settle(0.01, 0.0, 0.02, 0.01, 100) is None


def test_24_labelled_samples_cannot_establish_a_one_percent_budget() -> None:
    labels = np.arange(24) % 10
    ref = _scores(labels)
    why, decided_by, fid = judge_outputs([ref], [_int8_like(ref, 0)], labels=[labels], precision="int8",
                                         accuracy_budget=0.01)
    assert why == "" and fid is not None and fid.accuracy == fid.reference_accuracy == 1.0
    assert fid.cannot_judge.startswith("its accuracy drop on 24 labelled samples is 0.00%")
    assert "95% interval (-13.8% to +13.8%)" in fid.cannot_judge and fid.settle_samples and fid.settle_samples > 4000
    assert "the interval reaches past the budget" in decided_by
    # The plan's requirement check says the same: not met, not missed, not established, and what would settle it.
    check = next(c for c in evaluate(load_requirements(device_class="cpu_server", overrides={"accuracy_drop": 0.01}),
                                     {"fidelity": to_data(fid)}) if c.name == "accuracy")
    assert check.status == CheckStatus.NOT_ESTABLISHED and check.met is None
    assert "straddles the 1.00% budget" in check.margin and "labelled samples would settle it" in check.margin


def test_enough_samples_settle_it_either_way() -> None:
    labels = np.arange(2000) % 10
    ref = _scores(labels)
    why, _, fid = judge_outputs([ref], [_int8_like(ref, 0)], labels=[labels], precision="int8", accuracy_budget=0.01)
    assert why == "" and fid is not None and not fid.cannot_judge  # the interval clears the budget: met
    assert fid.accuracy_drop_high is not None and fid.accuracy_drop_high < 0.01
    # A change of function by design (pruning, fine-tuning) is judged on accuracy alone.
    why, _, fid = judge_outputs([ref], [_int8_like(ref, 200)], labels=[labels], precision="int8",
                                accuracy_budget=0.01, changes_function=True)
    assert why.startswith("accuracy 90.00% is 10.00% below the original's 100.00%") and "beyond the 1.00%" in why
