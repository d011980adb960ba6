"""The fidelity rule a package carries in its manifest: the plan's gate at the candidate's precision, as numbers.

The numbers come from the plan's one definition (planner.measure.fidelity: the precision's `FidelityGate`, the
top-1 margin factor, the input spread a test needs, the share that makes an fp32 candidate exact); the
package's check (planner.deploy.check, which run.py carries and planner verify imports) applies them. A
candidate that changes the model's function by design and that the plan judged by accuracy on labels has no
output-similarity gate in the plan, and none here: the package's samples carry no labels.
"""

from __future__ import annotations

from typing import Any

from planner.results.values import REPRODUCE_TOLERANCE

LATENCY_TOLERANCE = REPRODUCE_TOLERANCE
"""How far a package's p50 may be from the recorded one (a share): the plan's own reproduce rule."""


def fidelity_rule(precision: str, *, output_kind: str = "", changes_function: bool = False,
                  judged_by_accuracy: bool = False) -> dict[str, Any]:
    """The rule's numbers for a candidate at `precision` whose first output is of `output_kind` ('' when not
    recorded: read from the output's shape, class scores for a (batch, classes) output)."""
    from planner.measure.fidelity import DEFAULT_GATES, EXACT_SHARE, MARGIN_NOISE_FACTOR, MIN_INPUT_SPREAD
    from planner.plugins import Precision

    parsed = Precision(precision)
    gate = DEFAULT_GATES[parsed]
    rule: dict[str, Any] = {
        "precision": str(parsed), "output_kind": output_kind or "classes",
        "min_cosine": gate.min_cosine, "min_top1": gate.min_top1, "max_spread_error": gate.max_spread_error,
        "max_relative_error": gate.max_relative_error,
        "interval_decides": gate.interval_decides or changes_function,
        "margin_factor": MARGIN_NOISE_FACTOR, "min_input_spread": MIN_INPUT_SPREAD,
        # Only an fp32 candidate that keeps the function can be exact (planner.measure.fidelity.judge_outputs).
        "exact_share": EXACT_SHARE if parsed == Precision.FP32 and not changes_function else None,
    }
    if changes_function and judged_by_accuracy:
        # The plan judged it on accuracy alone (its outputs cannot match the original's by design).
        rule.update(min_cosine=-1.0, min_top1=0.0, min_input_spread=0.0)
    return rule


def rule_of(candidate: Any) -> dict[str, Any]:
    """The rule for a measured candidate (a CandidateResult): its precision, its output's kind as the plan
    recorded it, and whether it changes the function and was judged on labels."""
    from planner.plugins import Arithmetic
    from planner.results import Status

    fid = candidate.fidelity
    declared = candidate.declared
    rule = fidelity_rule(candidate.precision, output_kind=(fid.output_kind or "") if fid is not None else "",
                         changes_function=declared is not None and declared.arithmetic == Arithmetic.APPROXIMATE,
                         judged_by_accuracy=fid is not None and fid.accuracy is not None)
    if candidate.status is Status.UNCONFIRMED:
        # The package's few samples cannot settle what the plan's could not: the check says so beside its verdict.
        rule["plan_not_established"] = (candidate.reason or "its fidelity was not established").removeprefix(
            "not established: ")
    return rule
