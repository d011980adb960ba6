"""Predictions: the speedup band set for each candidate before it was measured, beside the measurement."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import ordered
from planner.results import Status, names

# Statuses of a candidate that was timed (its speedup is a measurement, whatever the fidelity gate said).
_MEASURED = (Status.OK, Status.REJECTED, Status.UNCONFIRMED)
_HELD = {"inside": "inside", "above": "above the band", "below": "below the band", "": "not measured"}


def render(data: ReportData) -> list[str]:
    """The Predictions section ([] when no candidate carries a prediction, as in older results)."""
    rows = []
    for cand in ordered(data):
        prediction = cand.prediction
        if prediction is None or prediction.low is None or prediction.high is None:
            continue
        measured = data.speedup_of(cand) if cand.status in _MEASURED else None
        rows.append([names.title(cand), f"{fmt.speedup(prediction.low)} to {fmt.speedup(prediction.high)}",
                     fmt.speedup(measured) if measured is not None else "—", _HELD[prediction.verdict(measured)],
                     prediction.basis or "—"])
    if not rows:
        return []
    lines = ["## Predictions", "",
             "Before measuring, the planner predicts each candidate's speedup over the baseline from the "
             "hardware (INT8 dot-product and bf16 instructions) and the profile (where the time goes, "
             "depthwise convolutions, attention). These are estimates, set before the measurement; the "
             "measured speedup is the fact.", ""]
    lines += fmt.table(["Candidate", "Predicted speedup", "Measured", "Held?", "Why"], rows)
    if data.run.predictions_held:
        lines += ["", data.run.predictions_held]
    return lines + [""]
