"""Checklist: the profiling questions, the answers found (with evidence), and those the user owns."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_list, first, text
from planner.report.pipeline_lines import pipeline_lines

_STATUS = {"auto": "answered from measurements", "ask-user": "**you must answer**",
           "ask_user": "**you must answer**", "not-measured": "not measured",
           "not_measured": "not measured"}


_GROUPS = {"cpu": "CPU", "gpu": "GPU", "edge": "Edge", "model": "Model", "general": "General"}


def _group(name: str) -> str:
    return _GROUPS.get(name.lower(), name[:1].upper() + name[1:]) if name else "General"


def _answer(item: dict) -> str:
    value = item.get("answer")
    if value is None or value == "":
        return "—"
    return value if isinstance(value, str) else fmt.number(value)


def _evidence(item: dict) -> str:
    value = item.get("evidence")
    if value is None or value == "":
        return "—"
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')} {fmt.number(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(text(v) for v in value)
    return text(value)


def render(data: ReportData) -> list[str]:
    """The Checklist section."""
    lines = ["## Checklist", ""]
    items = [i for i in as_list(data.results.get("checklist")) if isinstance(i, dict)]
    if not items:
        return lines + [f"Checklist: {data.missing('walking the checklist')}.", ""]
    groups: dict[str, list[dict]] = {}
    for item in items:
        groups.setdefault(_group(text(item.get("group"))), []).append(item)
    for group, members in groups.items():
        lines += [f"### {group}", ""]
        rows = [[text(first(m, "question", "text", "id")) or "question", _answer(m), _evidence(m),
                 _STATUS.get(text(m.get("status")), text(m.get("status")) or "status not recorded")]
                for m in members]
        lines += fmt.table(["Question", "Answer", "Evidence", "Status"], rows) + [""]
    request = pipeline_lines(data)
    if request:
        lines += [*request, ""]
    ask = [m for m in items if text(m.get("status")).replace("_", "-") == "ask-user"]
    if ask:
        lines += ["Questions only you can answer:", ""]
        for m in ask:
            prompt = text(m.get("prompt"))
            lines.append(f"- {text(first(m, 'question', 'text', 'id'))}" + (f" — {prompt}" if prompt else ""))
    else:
        lines.append("No question needs you: each was answered from this run or marked not measured.")
    unmeasured = [m for m in items if text(m.get("status")).replace("_", "-") == "not-measured"]
    if unmeasured:
        lines += ["", "Not measured in this run (the evidence column says why):", ""]
        lines += [f"- {text(first(m, 'question', 'text', 'id'))}" for m in unmeasured]
    return lines + [""]
