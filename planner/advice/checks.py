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
    if peak and flops and _roof_beaten(results, flops / peak * 1000.0):
        # A measurement under the roof's floor shows the roof was measured too low: it bounds nothing, so no
        # check may call a target impossible from it (the report says the roof was beaten where it shows it).
        peak = None
    # The advice reads results.json's form: the model as an object ({} before one is loaded).
    model = to_data(results.model) if results.model is not None else {}
    measured = {**to_data(subject), "model": model, "flops_per_sample": flops}
    return tuple(evaluate(requirements, measured, peak_flops_per_s=peak))


def _roof_beaten(results: PlanResults, floor_ms: float) -> bool:
    """Whether any fp32 run of the model's own arithmetic (the baseline, or a runtime or setting change) measured a
    median below the fp32 roof's floor for that work."""
    same_work = [c for c in results.candidates if c.precision in ("fp32", "") and c.p50 is not None
                 and (c.declared is None or (c.declared.arithmetic == "none" and not c.declared.transforms_model))]
    timed = [c.p50 for c in same_work] + ([results.baseline.latency_ms.p50_ms] if results.baseline else [])
    return any(t is not None and t < floor_ms for t in timed)
