"""A ternary candidate that fails the fidelity gate says what it needs: ternary-aware training."""

from __future__ import annotations

import numpy as np

from planner.pipeline.candidates import CandidateRun
from planner.results import Status


def _run_with_reference(reference: list[np.ndarray]) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the gate's two attributes matter here
    run.reference = reference
    run.accuracy_budget = None
    return run


def test_failing_ternary_is_marked_as_needing_training():
    rng = np.random.default_rng(0)
    reference = [rng.standard_normal((64, 10)).astype(np.float32)]
    wrong = [rng.standard_normal((64, 10)).astype(np.float32)]
    status, reason, _ = _run_with_reference(reference)._gate("ternary", wrong, None)
    assert status is Status.REJECTED
    assert reason.startswith("fails fidelity: needs ternary-aware training")
    status, reason, _ = _run_with_reference(reference)._gate("int8", wrong, None)
    assert status is Status.REJECTED and reason.startswith("fidelity check:")


def test_a_faithful_ternary_passes():
    # Outputs that differ from input to input: a reference the same for every input could not be judged.
    reference = [np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)]
    status, reason, _ = _run_with_reference(reference)._gate("ternary", [reference[0].copy()], None)
    assert status is Status.OK and reason == ""
