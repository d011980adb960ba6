"""The Markdown report: a title, then every section in order, rendered from results.json alone."""

from __future__ import annotations

import re
from typing import Any, Mapping

from planner.report.data import ReportData, dig, text
from planner.report.sections import SECTIONS
from planner.results import PlanResults, current_schema


def render_markdown(results: PlanResults | Mapping[str, Any], *, figures: Mapping[str, str] | None = None,
                    figure_notes: Mapping[str, str] | None = None) -> str:
    """The report as Markdown text; pure (no file IO).

    `figures` maps a figure name (see planner.report.figdata.FIGURES) to its path relative to
    the report; None means figures were not rendered. `figure_notes` says why a figure whose
    data exists was not drawn.
    """
    data = ReportData(current_schema(results),
                      dict(figures) if figures is not None else None, dict(figure_notes or {}))
    model = data.model
    name = text(model.get("name")) or text(model.get("source")) or "model"
    target = text(data.results.get("target"))
    lines = [f"# Deployment report: {name}" + (f" on {target}" if target else ""), ""]
    meta = [f"status **{data.status}**"]
    version = text(data.results.get("planner_version")) or text(dig(data.results, "environment", "planner"))
    if version:
        meta.insert(0, f"planner {version}")
    if data.results.get("finished"):
        meta.append(f"finished {text(data.results['finished'])}")
    lines += ["*" + ", ".join(meta) + ". Every number below was measured in this run and read "
              "from results.json, unless it is labelled as an estimate.*", ""]
    for section in SECTIONS:
        lines += section(data)
    body = "\n".join(lines)
    # Sections end with a blank line and may start with one; keep at most one between blocks.
    body = re.sub(r"\n{3,}", "\n\n", body)
    return body.strip() + "\n"
