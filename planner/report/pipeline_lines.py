"""The user's requests timed end to end (`--pipeline`) as the report words them, read from results.json."""

from __future__ import annotations

from typing import Any

from planner.codec import SchemaError, from_data
from planner.report.data import ReportData
from planner.results.pipeline_split import PipelineSplit, split_lines


def _split(value: Any) -> PipelineSplit | None:
    if not isinstance(value, dict) or not value.get("pipeline"):
        return None
    try:
        return from_data(value, PipelineSplit)
    except SchemaError:
        return None


def pipeline_lines(data: ReportData) -> list[str]:
    """The basis, one line per model timed (the original, the winner) and what the shares mean; [] without it."""
    best = data.best
    winner = _split(best.get("pipeline")) if best is not None and not data.is_reference(best) else None
    label = str(best.get("label", "")) if winner is not None and best is not None else ""
    return split_lines(_split(data.baseline.get("pipeline")), winner, winner_label=f"`{label}`" if label else "")
