"""Checklist: the profiling questions, the answers found (with evidence), and those the user owns."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData
from planner.report.pipeline_lines import pipeline_lines
from planner.results.decisions import AnswerRecord, AnswerStatus, Group

_STATUS = {AnswerStatus.AUTO: "answered from measurements", AnswerStatus.ASK_USER: "**you must answer**",
           AnswerStatus.NOT_MEASURED: "not measured"}

_GROUPS = {Group.CPU: "CPU", Group.GPU: "GPU", Group.EDGE: "Edge"}


def _question(item: AnswerRecord) -> str:
    return item.question or item.id


def render(data: ReportData) -> list[str]:
    """The Checklist section."""
    lines = ["## Checklist", ""]
    items = data.run.checklist
    if not items:
        return lines + [f"Checklist: {data.missing('walking the checklist')}.", ""]
    groups: dict[str, list[AnswerRecord]] = {}
    for item in items:
        groups.setdefault(_GROUPS[item.group], []).append(item)
    for group, members in groups.items():
        lines += [f"### {group}", ""]
        rows = [[_question(m) or "question", m.answer or "—", m.evidence or "—", _STATUS.get(m.status, str(m.status))]
                for m in members]
        lines += fmt.table(["Question", "Answer", "Evidence", "Status"], rows) + [""]
    request = pipeline_lines(data)
    if request:
        lines += [*request, ""]
    ask = [m for m in items if m.status == AnswerStatus.ASK_USER]
    if ask:
        lines += ["Questions only you can answer:", ""]
        lines += [f"- {_question(m)}" + (f" — {m.prompt}" if m.prompt else "") for m in ask]
    else:
        lines.append("No question needs you: each was answered from this run or marked not measured.")
    unmeasured = [m for m in items if m.status == AnswerStatus.NOT_MEASURED]
    if unmeasured:
        lines += ["", "Not measured in this run (the evidence column says why):", ""]
        lines += [f"- {_question(m)}" for m in unmeasured]
    return lines + [""]
