"""Where the fidelity check cannot judge (the original's outputs barely depend on the inputs used), a candidate
that changes the arithmetic is not established, never ok; the reason says which data would settle it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.pipeline.candidates import NOT_ESTABLISHED, CandidateRun
from planner.results import Status


def _run(reference: list[np.ndarray]) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the gate's two attributes matter here
    run.reference = reference
    run.accuracy_budget = None
    return run


def _flat() -> list[np.ndarray]:
    """Class scores as a deep random-weight network gives them: nearly the same for every input (4e-6)."""
    rng = np.random.default_rng(0)
    shared = rng.normal(0, 1, size=(1, 10))
    return [shared + 4e-6 * rng.normal(0, 1, size=(8, 10)) * float(np.linalg.norm(shared)) / np.sqrt(10)]


@pytest.mark.parametrize("precision", ["int8", "bf16", "fp16", "ternary"])
def test_a_lower_precision_that_cannot_be_judged_is_not_established(precision: str) -> None:
    reference = _flat()
    close = [reference[0] * (1 + 1e-6)]  # raw cosine 1.0: what passed it before
    status, reason, fid = _run(reference)._gate(precision, close, None, generated_inputs=True)
    assert status is Status.UNCONFIRMED
    assert reason.startswith(f"{NOT_ESTABLISHED}: cannot judge: the model's outputs barely depend on its inputs "
                             "(random weights?)")
    assert "--val-data" in reason and "trained weights" in reason
    assert fid is not None and fid.cannot_judge and "on generated inputs" in fid.decided_by
    assert "--val-data" in fid.decided_by  # what would settle it reaches the report, the TUI and --json


def test_an_approximation_at_fp32_that_cannot_be_judged_is_not_established() -> None:
    reference = _flat()
    status, _, _ = _run(reference)._gate("fp32", [reference[0].copy()], None, changes_function=True,
                                         generated_inputs=True)
    assert status is Status.UNCONFIRMED


def test_on_real_inputs_that_barely_move_the_outputs_trained_weights_would_settle_it() -> None:
    reference = _flat()
    status, reason, fid = _run(reference)._gate("int8", [reference[0].copy()], None, generated_inputs=False)
    assert status is Status.UNCONFIRMED and "trained weights" in reason
    assert fid is not None and "generated inputs" not in fid.decided_by


def test_an_exact_fp32_rewrite_stays_ok_and_one_that_ignores_its_input_does_not() -> None:
    reference = _flat()
    status, reason, fid = _run(reference)._gate("fp32", [reference[0].copy()], None, generated_inputs=True)
    assert status is Status.OK and reason == ""
    assert fid is not None and fid.decided_by.startswith("exact to rounding:")
    mean = np.repeat(reference[0].mean(axis=0, keepdims=True), 8, axis=0)
    status, reason, _ = _run(reference)._gate("fp32", [mean], None, generated_inputs=True)
    assert status is Status.UNCONFIRMED and "cannot judge" in reason


def test_an_input_dependent_part_gone_wrong_is_caught_where_the_raw_cosine_passes() -> None:
    rng = np.random.default_rng(1)
    shared = rng.normal(0, 1, size=(1, 10)) * 50
    reference = [shared + rng.normal(0, 1, size=(16, 10))]
    wrong = [shared + rng.normal(0, 1, size=(16, 10))]
    status, reason, fid = _run(reference)._gate("int8", wrong, None, generated_inputs=False)
    assert fid is not None and fid.cosine > 0.99
    assert status is Status.REJECTED
    assert reason.startswith("fidelity check: ") and "part that depends on the input" in reason


@pytest.mark.parametrize(("share", "status"), [(0.03, Status.OK), (0.5, Status.UNCONFIRMED)])
def test_an_fp32_rewrite_passes_while_its_error_stays_a_small_share_of_the_input_dependent_part(share, status):
    reference = _flat()
    varying = reference[0] - reference[0].mean(axis=0)
    # Rounding-like noise, unrelated to the input, sized against the part that depends on the input.
    noise = np.random.default_rng(2).normal(0, 1, size=varying.shape)
    candidate = [reference[0] + share * noise * np.linalg.norm(varying) / np.linalg.norm(noise)]
    got, _, fid = _run(reference)._gate("fp32", candidate, None, generated_inputs=True)
    assert got is status and fid is not None and fid.centered_error == pytest.approx(share)
