"""The user's requests timed end to end (`--pipeline`) as the report words them, read from results.json."""

from __future__ import annotations

from planner.report.data import ReportData
from planner.results.pipeline_split import PipelineSplit, split_lines


def _given(split: PipelineSplit | None) -> PipelineSplit | None:
    """The split when one was recorded for a `--pipeline` argument, else None."""
    return split if split is not None and split.pipeline else None


def pipeline_lines(data: ReportData) -> list[str]:
    """The basis, one line per model timed (the original, the winner) and what the shares mean; [] without it."""
    best = data.best_cand
    winner = _given(best.pipeline) if best is not None and not data.is_reference_cand(best) else None
    label = best.label if winner is not None and best is not None else ""
    baseline = _given(data.run.baseline.pipeline) if data.run.baseline is not None else None
    return split_lines(baseline, winner, winner_label=f"`{label}`" if label else "")
