"""A measured candidate's fidelity verdict in one word, the risk a reader weighs against its speed.

The verdict is read from what the plan recorded (the candidate's status and whether its arithmetic is exact), so
every place that states it (the decision figure, a table's column) says the same word for the same candidate.
"""

from __future__ import annotations

from enum import StrEnum

from planner.results import CandidateResult, Status


class Verdict(StrEnum):
    """How far a candidate's outputs can be trusted to match the original model's, lowest risk first."""

    BASELINE = "baseline"
    EXACT = "exact"
    PASSED = "passed"
    NOT_ESTABLISHED = "not established"
    REJECTED = "rejected"


MEANING: dict[Verdict, str] = {
    Verdict.BASELINE: "the original model",
    Verdict.EXACT: "the same arithmetic, reproduces the original",
    Verdict.PASSED: "changes the arithmetic, passed the fidelity check",
    Verdict.NOT_ESTABLISHED: "changes the arithmetic, the check could not settle it",
    Verdict.REJECTED: "failed the fidelity check",
}
"""Each verdict explained in a few words, for a legend or a term's first use."""


def verdict(cand: CandidateResult, *, is_reference: bool = False) -> Verdict | None:
    """The candidate's verdict; None for one that was not measured (failed, skipped, stopped part-way)."""
    if is_reference or cand.is_reference:
        return Verdict.BASELINE
    if cand.status == Status.REJECTED:
        return Verdict.REJECTED
    if cand.status == Status.UNCONFIRMED:
        return Verdict.NOT_ESTABLISHED
    if cand.status == Status.OK:
        return Verdict.EXACT if cand.fidelity is not None and cand.fidelity.exact else Verdict.PASSED
    return None
