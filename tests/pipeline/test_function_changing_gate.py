"""With labels, a candidate that changes the function by design (pruning, low-rank) is judged on accuracy."""

from __future__ import annotations

import numpy as np

from planner.pipeline.candidates import CandidateRun
from planner.results import Status


def _run(reference: list[np.ndarray]) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the gate's two attributes matter here
    run.reference = reference
    run.accuracy_budget = None
    return run


def _case(n: int = 64) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Reference logits, labels they get right, and a candidate that is further off but ranks the same."""
    rng = np.random.default_rng(1)
    reference = rng.standard_normal((n, 10)).astype(np.float32)
    labels = reference.argmax(axis=1)
    candidate = reference + 0.15 * rng.standard_normal(reference.shape).astype(np.float32)
    candidate[np.arange(n), labels] += 5.0  # still the same class wins everywhere
    return [reference], [candidate], [labels]


def test_a_pruned_candidate_with_its_accuracy_kept_passes_on_accuracy() -> None:
    reference, candidate, labels = _case(2000)
    status, reason, fid = _run(reference)._gate("fp32", candidate, labels, changes_function=True)
    assert fid is not None and fid.cosine < 0.9999  # it would fail the fp32 cosine gate
    assert status is Status.OK and reason == ""
    assert fid.decided_by.startswith("accuracy on 2000 labelled samples")
    # On 64 samples the same kept accuracy cannot bound the drop under 1%: not established, with what would settle it.
    reference, candidate, labels = _case()
    status, reason, fid = _run(reference)._gate("fp32", candidate, labels, changes_function=True)
    assert status is Status.UNCONFIRMED and reason.startswith("not established: accuracy on 64 labelled samples")
    assert fid is not None and fid.settle_samples is not None and "labelled samples would settle it" in reason


def test_a_runtime_switch_is_still_held_to_cosine() -> None:
    reference, candidate, labels = _case()
    status, reason, _ = _run(reference)._gate("fp32", candidate, labels)
    assert status is Status.REJECTED and "cosine similarity" in reason


def test_without_labels_a_pruned_candidate_is_held_to_cosine() -> None:
    reference, candidate, _ = _case()
    status, reason, _ = _run(reference)._gate("fp32", candidate, None, changes_function=True)
    assert status is Status.REJECTED and "cosine similarity" in reason


def test_an_accuracy_drop_past_the_budget_is_rejected() -> None:
    reference, candidate, labels = _case()
    wrong = [candidate[0].copy()]
    wrong[0][:8, labels[0][:8]] -= 50.0  # eight samples now pick another class: a 12.5% drop
    status, reason, _ = _run(reference)._gate("fp32", wrong, labels, changes_function=True)
    assert status is Status.REJECTED and "below the original" in reason
