"""Decision path: the decision-tree nodes the run went through, what each decided and why, and the
plan it led to."""

from __future__ import annotations

import re

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, first, text

# Results that only say a node was passed through; the node's text says enough.
_SILENT_RESULTS = ("step", "noted", "taken", "")


def _result(node: dict) -> str:
    """What the node decided, in words ('' for structural nodes)."""
    value = first(node, "result", "branch", "answer", "choice")
    if value is None:
        taken = node.get("taken")
        value = taken if isinstance(taken, str) else ""
    shown = value if isinstance(value, str) else fmt.number(value)
    return "" if shown in _SILENT_RESULTS else shown


def _evidence(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')} {fmt.number(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(text(v) for v in value)
    return text(value)


def _action(action: object) -> str:
    if not isinstance(action, dict):
        return text(action)
    line = text(first(action, "title", "text", "action", "id")) or "action"
    plugins = [text(p) for p in as_list(action.get("plugins")) if text(p)]
    line += (f" (measured by {', '.join(f'`{p}`' for p in plugins)})" if plugins
             else " (advice: no plugin measures it)")
    if action.get("when"):
        line += f", {text(action['when'])}"
    evidence = _evidence(first(action, "evidence", "why", "reason"))
    return line + (f" — {evidence}" if evidence else "")


def render(data: ReportData) -> list[str]:
    """The Decision path section."""
    lines = ["## Decision path", ""]
    path = as_dict(data.results.get("decision_path"))
    if not path:
        return lines + [f"Decision path: {data.missing('walking the decision tree')}.", ""]
    nodes = [n for n in as_list(first(path, "visited", "nodes")) if isinstance(n, dict)]
    if path.get("target"):
        lines += [f"The `{path['target']}` tree, walked against this run's measurements:", ""]
    taken = [n for n in nodes if n.get("taken") is not False]
    for node in taken:
        # Node texts carry the tree's own numbering ("1. Profile ..."); escaped, it stays text
        # instead of starting a nested Markdown list.
        question = re.sub(r"^(\d+)\.", r"\1\\.", text(first(node, "text", "question", "id")) or "node")
        result = _result(node)
        evidence = _evidence(node.get("evidence"))
        lines.append(f"- {question}" + (f" → **{result}**" if result else "")
                     + (f" — {evidence}" if evidence else ""))
    if not taken:
        lines.append("No node of the tree was recorded as visited.")
    skipped = [text(first(n, "text", "question", "id")) for n in nodes if n.get("taken") is False]
    if any(skipped):
        lines += ["", "Not reached on this path:", ""] + [f"- {s}" for s in skipped if s]
    actions = [_action(a) for a in as_list(path.get("actions"))]
    if actions:
        lines += ["", "Recommended actions, in order:", ""] + [f"- {a}" for a in actions if a]
    plan = data.plan
    if plan.get("summary") or plan.get("notes"):
        lines += ["", "The plan:", ""]
        if plan.get("summary"):
            lines.append(f"- {text(plan['summary'])}")
        lines += [f"- {text(n)}" for n in as_list(plan.get("notes")) if text(n)]
    return lines + [""]
