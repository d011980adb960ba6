"""Predictions: the speedup band set for each candidate before it was measured, beside the measurement."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import label, ordered
from planner.results.view import as_dict, number, text


def _band(prediction: dict) -> str:
    low, high = number(prediction.get("low")), number(prediction.get("high"))
    if low is None or high is None:
        return ""
    return f"{fmt.speedup(low)} to {fmt.speedup(high)}"


def _held(low: float, high: float, measured: float | None) -> str:
    if measured is None:
        return "not measured"
    if measured < low:
        return "below the band"
    if measured > high:
        return "above the band"
    return "inside"


def render(data: ReportData) -> list[str]:
    """The Predictions section ([] when no candidate carries a prediction, as in older results)."""
    rows = []
    for cand in ordered(data):
        prediction = as_dict(cand.get("prediction"))
        band = _band(prediction)
        if not band:
            continue
        measured = data.speedup(cand) if text(cand.get("status")) in ("ok", "rejected") else None
        held = _held(float(prediction["low"]), float(prediction["high"]), measured)
        rows.append([label(cand), band, fmt.speedup(measured) if measured is not None else "—", held,
                     text(prediction.get("basis")) or "—"])
    if not rows:
        return []
    lines = ["## Predictions", "",
             "Before measuring, the planner predicts each candidate's speedup over the baseline from the "
             "hardware (INT8 dot-product and bf16 instructions) and the profile (where the time goes, "
             "depthwise convolutions, attention). These are estimates, set before the measurement; the "
             "measured speedup is the fact.", ""]
    lines += fmt.table(["Candidate", "Predicted speedup", "Measured", "Held?", "Why"], rows)
    held = text(data.results.get("predictions_held"))
    if held:
        lines += ["", held]
    return lines + [""]
