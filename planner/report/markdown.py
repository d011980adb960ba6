"""The Markdown report, rendered from results.json alone: a title, the decision (Summary and Roadmap), then
every piece of evidence under one Appendix heading."""

from __future__ import annotations

import re
from typing import Any, Mapping

from planner.report.data import ReportData, dig, text
from planner.report.sections import APPENDIX, DECISION
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
