"""Each requirement checked against one measured candidate, from the results alone (the engine after a
plan, the TUI's Results step per row)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.advice.requirements import RequirementCheck, Requirements, evaluate
from planner.codec import to_data

if TYPE_CHECKING:
    from planner.results import CandidateResult, PlanResults


def requirement_checks(results: PlanResults, requirements: Requirements, *,
                       subject: CandidateResult) -> tuple[RequirementCheck, ...]:
    """Each requirement checked against one measured candidate (the best, or the baseline)."""
    peak = results.ceilings.peak_flops.get("fp32") if results.ceilings else None
    flops = results.baseline.flops_per_sample if results.baseline else None
    # The advice reads results.json's form: the model as an object ({} before one is loaded).
    model = to_data(results.model) if results.model is not None else {}
    measured = {**to_data(subject), "model": model, "flops_per_sample": flops}
    return tuple(evaluate(requirements, measured, peak_flops_per_s=peak))
