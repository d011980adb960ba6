"""The Markdown the plan hands over, rendered from results.json alone: report.md, the decision a deployment engineer
reads in a minute (the headline, the Summary, the shortlist with its figure and the Roadmap), and evidence.md, every
measurement behind it, one section per heading, which report.md links to section by section."""

from __future__ import annotations

import re
from typing import Any, Mapping

from planner.report.data import ReportData
from planner.report.sections import APPENDIX, DECISION
from planner.report.sections.summary import headline
from planner.results import PlanResults

EVIDENCE_NAME = "evidence.md"
"""The evidence file, beside report.md."""

_HEADING = re.compile(r"^(#{2,5}) (.+)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_REFERENCE = re.compile(r"Appendix › ([A-Z][\w-]*(?: [\w-]+)*)")


def model_name(data: ReportData) -> str:
    """The model's name, else its source; '' when neither was recorded."""
    model = data.model_record
    return (model.name or model.source) if model is not None else ""


def anchor(heading: str) -> str:
    """The link anchor a Markdown viewer (GitHub's rule) gives a heading: lower case, punctuation dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _title(data: ReportData, what: str) -> str:
    name = model_name(data) or "model"
    target = data.run.target
    return f"# {what}: {name}" + (f" on {target}" if target else "")


def _meta(data: ReportData) -> str:
    run = data.run
    meta = [f"status **{data.status}**"]
    version = run.planner_version or (run.environment.planner if run.environment is not None else "")
    if version:
        meta.insert(0, f"planner {version}")
    if run.quick:
        meta.append("a quick plan (fewer samples and smaller sweeps than a full one)")
    if run.finished:
        meta.append(f"finished {run.finished}")
    return ("*" + ", ".join(meta) + ". Every number was measured in this run and read from results.json, unless "
            "it is labelled as an estimate or a projection.*")


def _tidy(lines: list[str]) -> str:
    # Sections end with a blank line and may start with one; keep at most one between blocks.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _sections(lines: list[str]) -> list[str]:
    """The level-2 headings outside fenced code, in order."""
    found, fenced = [], False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            found.append(line[3:].strip())
    return found


def _linked(lines: list[str], sections: list[str], target: str) -> list[str]:
    """Every 'Appendix › Name' made a link to that evidence section (`target` is the file, '' within it); a name
    that is no section's stays as words, pointing at the evidence file."""
    known = sorted(sections, key=len, reverse=True)

    def link(match: re.Match[str]) -> str:
        said = match.group(1)
        name = next((s for s in known if said.startswith(s)), None)
        if name is None:
            return f"{EVIDENCE_NAME} › {said}" if target else said
        return f"[{name}]({target}#{anchor(name)})" + said[len(name):]

    out, fenced = [], False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _REFERENCE.sub(link, line))
    return out


def _evidence_lines(data: ReportData) -> list[str]:
    return [line for section in APPENDIX for line in section(data)]


def _data(results: PlanResults | Mapping[str, Any], figures: Mapping[str, str] | None,
          figure_notes: Mapping[str, str] | None) -> ReportData:
    return ReportData(results, dict(figures) if figures is not None else None, dict(figure_notes or {}))


def _report(data: ReportData, sections: list[str]) -> str:
    lines = [_title(data, "Deployment report"), "", headline(data), "", _meta(data), ""]
    for section in DECISION:
        lines += section(data)
    lines += ["## Evidence", "",
              f"Every measurement behind this decision is in [{EVIDENCE_NAME}]({EVIDENCE_NAME}): "
              + ", ".join(f"[{s}]({EVIDENCE_NAME}#{anchor(s)})" for s in sections) + ".", ""]
    return _tidy(_linked(lines, sections, EVIDENCE_NAME))


def _evidence(data: ReportData, body: list[str], sections: list[str]) -> str:
    lines = [_title(data, "Evidence"), "",
             "*The measurements behind [report.md](report.md)'s decision, section by section: "
             + ", ".join(f"[{s}](#{anchor(s)})" for s in sections) + ".*", "", *body]
    return _tidy(_linked(lines, sections, ""))


def render_both(results: PlanResults | Mapping[str, Any], *, figures: Mapping[str, str] | None = None,
                figure_notes: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(report.md, evidence.md) as Markdown text from one reading of the results and one rendering of the evidence
    (report.md needs its section names to link them); pure."""
    data = _data(results, figures, figure_notes)
    body = _evidence_lines(data)
    sections = _sections(body)
    return _report(data, sections), _evidence(data, body, sections)


def render_markdown(results: PlanResults | Mapping[str, Any], *, figures: Mapping[str, str] | None = None,
                    figure_notes: Mapping[str, str] | None = None) -> str:
    """report.md as Markdown text; pure (no file IO): the decision, then links into evidence.md.

    `figures` maps a figure name (see planner.report.figdata.FIGURES) to its path relative to the report; None
    means figures were not rendered. `figure_notes` says why a figure whose data exists was not drawn.
    """
    return render_both(results, figures=figures, figure_notes=figure_notes)[0]


def render_evidence(results: PlanResults | Mapping[str, Any], *, figures: Mapping[str, str] | None = None,
                    figure_notes: Mapping[str, str] | None = None) -> str:
    """evidence.md as Markdown text; pure: every evidence section at level 2, in report order, under a line that
    points back to the decision in report.md."""
    return render_both(results, figures=figures, figure_notes=figure_notes)[1]
