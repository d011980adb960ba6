"""The Markdown report, rendered from results.json alone: a title, the decision (Summary and Roadmap), then
every piece of evidence under one Appendix heading."""

from __future__ import annotations

import re
from typing import Any, Mapping

from planner.report.data import ReportData
from planner.report.sections import APPENDIX, DECISION
from planner.results import PlanResults


def model_name(data: ReportData) -> str:
    """The model's name, else its source; '' when neither was recorded."""
    model = data.model_record
    return (model.name or model.source) if model is not None else ""


def render_markdown(results: PlanResults | Mapping[str, Any], *, figures: Mapping[str, str] | None = None,
                    figure_notes: Mapping[str, str] | None = None) -> str:
    """The report as Markdown text; pure (no file IO).

    `figures` maps a figure name (see planner.report.figdata.FIGURES) to its path relative to
    the report; None means figures were not rendered. `figure_notes` says why a figure whose
    data exists was not drawn.
    """
    data = ReportData(results,
                      dict(figures) if figures is not None else None, dict(figure_notes or {}))
    run = data.run
    name = model_name(data) or "model"
    target = run.target
    lines = [f"# Deployment report: {name}" + (f" on {target}" if target else ""), ""]
    meta = [f"status **{data.status}**"]
    version = run.planner_version or (run.environment.planner if run.environment is not None else "")
    if version:
        meta.insert(0, f"planner {version}")
    if run.finished:
        meta.append(f"finished {run.finished}")
    lines += ["*" + ", ".join(meta) + ". Every number below was measured in this run and read "
              "from results.json, unless it is labelled as an estimate.*", ""]
    for section in DECISION:
        lines += section(data)
    lines += appendix([line for section in APPENDIX for line in section(data)])
    body = "\n".join(lines)
    # Sections end with a blank line and may start with one; keep at most one between blocks.
    body = re.sub(r"\n{3,}", "\n\n", body)
    return body.strip() + "\n"


APPENDIX_HEADING = "## Appendix"
"""The one heading every evidence section sits under."""

_HEADING = re.compile(r"^#{2,5} ")
_FENCE = re.compile(r"^\s*(```|~~~)")


def appendix(lines: list[str]) -> list[str]:
    """The evidence sections under `## Appendix`, each heading one level deeper, with a line naming them.

    Lines inside fenced code (a reproduce command, a shell comment) are never taken for headings.
    """
    if not lines:
        return []
    demoted, fenced = [], False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        demoted.append("#" + line if not fenced and _HEADING.match(line) else line)
    sections = [line[4:] for line in demoted if line.startswith("### ")]
    return [APPENDIX_HEADING, "",
            "*The evidence behind the Summary and the Roadmap, in full: " + "; ".join(sections) + ".*", "",
            *demoted]
