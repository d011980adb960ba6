"""The validation line: what the candidates' accuracy or agreement was measured on (`--val-data`)."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, text


def validation_lines(data: ReportData) -> list[str]:
    """One paragraph naming the validation data and what was measured on it; [] when there was none."""
    val = as_dict(data.results.get("validation"))
    if not val:
        return []
    basis = text(val.get("basis")) or "--val-data"
    labelled = val.get("labels") is True
    what = ("accuracy against the labels (and agreement with the original model)" if labelled
            else "agreement with the original model (no labels, so no accuracy)")
    described = text(val.get("description"))
    if not described:
        samples = fmt.number(val.get("samples"))
        described = f"{samples} samples from {text(val.get('folder')) or 'the validation folder'}"
    line = f"**Validation data** ({basis}): {what} was measured on {described}."
    skipped = text(val.get("skipped"))
    if skipped:
        line += f" Warning: {skipped}."
    return [line, ""]
