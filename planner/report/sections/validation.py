"""The validation line: what the candidates' accuracy or agreement was measured on (`--val-data`)."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData


def validation_lines(data: ReportData) -> list[str]:
    """One paragraph naming the validation data and what was measured on it; [] when there was none."""
    val = data.run.validation
    if val is None:
        return []
    what = ("accuracy against the labels (and agreement with the original model)" if val.labels
            else "agreement with the original model (no labels, so no accuracy)")
    described = val.description or f"{fmt.number(val.samples)} samples from {val.folder or 'the validation folder'}"
    line = f"**Validation data** ({val.basis or '--val-data'}): {what} was measured on {described}."
    if val.skipped:
        line += f" Warning: {val.skipped}."
    return [line, ""]
