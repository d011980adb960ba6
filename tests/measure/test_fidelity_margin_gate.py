"""The margin-aware top-1 gate: top-1 counts only where the reference's margin exceeds the candidate's noise."""

from __future__ import annotations

import numpy as np

from planner.measure.fidelity import DEFAULT_GATES, compare, judge_outputs
from planner.plugins import Precision

INT8 = DEFAULT_GATES[Precision.INT8]


def test_tiny_margins_do_not_reject_a_close_candidate():
    # Logits whose leading two classes differ by less than the candidate's error: which one wins is
    # numerical noise. (The outputs still differ from input to input, so the check can judge them.)
    rng = np.random.default_rng(0)
    ref = rng.normal(0, 1, size=(16, 200))
    top = ref.argmax(axis=1)
    ref[np.arange(16), (top + 1) % 200] = ref.max(axis=1) - 1e-4  # each runner-up within 1e-4 of the top
    out = ref + rng.normal(0, 1e-3, size=ref.shape)
    fid = compare([ref], [out])
    assert fid.top1_samples == 0 and fid.top1_agreement is None
    assert fid.top1_agreement_all is not None and fid.top1_agreement_all < 0.9
    why, decided_by = INT8.judge(fid)
    assert why == ""
    assert "cosine" in decided_by and "top-1 is no test" in decided_by


def test_logits_nearly_the_same_for_every_input_cannot_be_judged():
    # The same level logits, but they barely move with the input (1e-5 of their size): the raw cosine
    # would pass anything close to that shared part, so the check says it cannot judge, never "passed".
    rng = np.random.default_rng(0)
    ref = 1.0 + rng.normal(0, 1e-5, size=(16, 200))
    out = ref + rng.normal(0, 1e-4, size=ref.shape)
    fid = compare([ref], [out])
    assert fid.input_spread is not None and fid.input_spread < 1e-4
    why, decided_by = INT8.judge(fid)
    assert why == "" and fid.cannot_judge
    assert decided_by.startswith("cannot judge: the model's outputs barely depend on its inputs (random weights?)")


def _swap_top_two(ref: np.ndarray, count: int) -> np.ndarray:
    out = ref.copy()
    for i in range(count):
        top, second = np.argsort(ref[i])[-1], np.argsort(ref[i])[-2]
        out[i, [top, second]] = out[i, [second, top]]
    return out


def test_a_flip_with_a_large_margin_is_still_rejected():
    rng = np.random.default_rng(1)
    ref = rng.normal(0, 3, size=(320, 100))
    # The candidate swaps the winner and the runner-up on 64 of 320 samples: a real error that the
    # overall cosine barely sees, and the margins are far above the candidate's typical error.
    fid = compare([ref], [_swap_top_two(ref, 64)])
    assert fid.cosine > INT8.min_cosine
    assert fid.top1_samples is not None and fid.top1_samples >= 280
    assert fid.top1_high is not None and fid.top1_high < INT8.min_top1  # the whole interval is below 90%
    why, decided_by = INT8.judge(fid)
    assert why.startswith("top-1 agreement") and "95% interval" in why and "whose top-1 margin exceeds" in why
    assert decided_by.startswith(f"top-1 agreement on {fid.top1_samples} of 320 samples")


def test_a_few_flips_on_few_samples_are_not_established():
    rng = np.random.default_rng(1)
    ref = rng.normal(0, 3, size=(32, 100))
    # 4 of 32 flipped: 87.5%, below the 90% level, but 32 samples cannot tell it from 95%.
    why, decided_by, fid = judge_outputs([ref], [_swap_top_two(ref, 4)], precision="int8")
    assert why == "" and fid is not None
    assert fid.top1_low is not None and fid.top1_low < INT8.min_top1 <= (fid.top1_high or 0)
    assert fid.cannot_judge.startswith("top-1 agreement is 87.5% over 32 samples, and its 95% interval")
    assert "samples would settle it" in fid.cannot_judge
    assert "the samples cannot tell" in decided_by


def test_top1_decides_only_over_decisive_samples():
    ref = np.array([[5.0, 0.0, 0.0], [1.0, 1.00001, 0.0]])
    out = ref + np.array([[0.0, 0.01, 0.0], [0.01, 0.0, 0.0]])  # flips only the near-tied second sample
    fid = compare([ref], [out])
    assert fid.top1_samples == 1 and fid.top1_agreement == 1.0 and fid.top1_agreement_all == 0.5
    why, decided_by = INT8.judge(fid)
    assert why == "" and decided_by.startswith("top-1 agreement on 1 of 2 samples")


def test_labels_make_accuracy_the_test():
    ref = np.array([[2.0, 0.0], [0.0, 2.0]])
    fid = compare([ref], [ref], labels=[np.array([0, 1])])
    why, decided_by = INT8.judge(fid)
    assert why == "" and decided_by.startswith("accuracy on 2 labelled samples")
    assert INT8.check(fid) == ""
