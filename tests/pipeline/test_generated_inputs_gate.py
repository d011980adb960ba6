"""On generated inputs, a candidate that changes the arithmetic and fails the fidelity check is not established
on real data (unconfirmed), never rejected; with validation data, or at fp32, the same failure is a rejection."""

from __future__ import annotations

import numpy as np
import pytest

from planner.pipeline.candidates import NOT_ESTABLISHED, CandidateRun
from planner.report.fmt import plain_reason
from planner.results import Status


def _run(reference: list[np.ndarray]) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the gate's two attributes matter here
    run.reference = reference
    run.accuracy_budget = None
    return run


def _drifted() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Reference class scores and a candidate whose top-1 flips on most samples (cosine still high)."""
    rng = np.random.default_rng(3)
    reference = rng.standard_normal((64, 10)).astype(np.float32) + 20.0
    candidate = reference.copy()
    winners = reference.argmax(axis=1)
    # Every sample's winner drops by 1.5: the runner-up takes over, yet the outputs stay close in cosine.
    candidate[np.arange(64), winners] -= 1.5
    return [reference], [candidate]


@pytest.mark.parametrize("precision", ["int8", "bf16", "fp16"])
def test_an_arithmetic_change_failing_on_generated_inputs_is_unconfirmed(precision: str) -> None:
    reference, candidate = _drifted()
    status, reason, fid = _run(reference)._gate(precision, candidate, None, generated_inputs=True)
    assert status is Status.UNCONFIRMED
    assert reason.startswith(f"{NOT_ESTABLISHED}: on generated inputs, top-1 agreement")
    assert "rejected" not in reason
    assert fid is not None and fid.decided_by.endswith("on generated inputs")


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_the_same_failure_on_validation_data_is_rejected(precision: str) -> None:
    reference, candidate = _drifted()
    status, reason, fid = _run(reference)._gate(precision, candidate, None, generated_inputs=False)
    assert status is Status.REJECTED and reason.startswith("fidelity check: top-1 agreement")
    assert fid is not None and "generated" not in fid.decided_by


def test_an_fp32_candidate_failing_on_generated_inputs_is_still_rejected() -> None:
    reference, candidate = _drifted()
    status, reason, _ = _run(reference)._gate("fp32", candidate, None, generated_inputs=True)
    assert status is Status.REJECTED and reason.startswith("fidelity check:")


def test_an_approximation_at_fp32_failing_on_generated_inputs_is_unconfirmed() -> None:
    reference, candidate = _drifted()
    status, _, _ = _run(reference)._gate("fp32", candidate, None, changes_function=True, generated_inputs=True)
    assert status is Status.UNCONFIRMED


def test_a_failing_ternary_on_generated_inputs_keeps_its_training_note_without_failing() -> None:
    rng = np.random.default_rng(0)
    reference = [rng.standard_normal((64, 10)).astype(np.float32)]
    wrong = [rng.standard_normal((64, 10)).astype(np.float32)]
    status, reason, _ = _run(reference)._gate("ternary", wrong, None, generated_inputs=True)
    assert status is Status.UNCONFIRMED
    assert reason.startswith(NOT_ESTABLISHED) and "needs ternary-aware training" in reason
    # The report's plain words still read the threshold: nothing glued to the gate's number.
    assert "below the 0.9 needed (post-training ternary" in plain_reason(reason)
    assert "fails" not in reason


def test_outputs_that_are_not_finite_are_rejected_even_on_generated_inputs() -> None:
    reference, candidate = _drifted()
    candidate[0][0, 0] = np.nan
    status, _, _ = _run(reference)._gate("fp16", candidate, None, generated_inputs=True)
    assert status is Status.REJECTED


def test_a_pass_on_generated_inputs_says_so() -> None:
    reference, _ = _drifted()
    status, reason, fid = _run(reference)._gate("int8", [reference[0] + 1e-4], None, generated_inputs=True)
    assert status is Status.OK and reason == ""
    assert fid is not None and fid.decided_by.endswith(", on generated inputs")
