"""Decision path: the decision-tree nodes the run went through, what each decided and why, and the
plan it led to."""

from __future__ import annotations

import re

from planner.report.data import ReportData
from planner.results.decisions import ActionRecord, VisitedNode

# Results that only say a node was passed through; the node's text says enough.
_SILENT_RESULTS = ("step", "noted", "taken", "")


def _result(node: VisitedNode) -> str:
    """What the node decided, in words ('' for structural nodes)."""
    return "" if node.result in _SILENT_RESULTS else node.result


def _action(action: ActionRecord) -> str:
    line = action.title or action.action or "action"
    plugins = [p for p in action.plugins if p]
    line += (f" (measured by {', '.join(f'`{p}`' for p in plugins)})" if plugins
             else " (advice: no plugin measures it)")
    if action.when:
        line += f", {action.when}"
    return line + (f" — {action.evidence}" if action.evidence else "")


def render(data: ReportData) -> list[str]:
    """The Decision path section."""
    lines = ["## Decision path", ""]
    path = data.run.decision_path
    if path is None:
        return lines + [f"Decision path: {data.missing('walking the decision tree')}.", ""]
    if path.target:
        lines += [f"The `{path.target}` tree, walked against this run's measurements:", ""]
    # Every node recorded was visited: the walk records only the path it took.
    for node in path.visited:
        # Node texts carry the tree's own numbering ("1. Profile ..."); escaped, it stays text
        # instead of starting a nested Markdown list.
        question = re.sub(r"^(\d+)\.", r"\1\\.", node.text or node.id or "node")
        result = _result(node)
        lines.append(f"- {question}" + (f" → **{result}**" if result else "")
                     + (f" — {node.evidence}" if node.evidence else ""))
    if not path.visited:
        lines.append("No node of the tree was recorded as visited.")
    actions = [_action(a) for a in path.actions]
    if actions:
        lines += ["", "Recommended actions, in order:", ""] + [f"- {a}" for a in actions]
    plan = data.run.plan
    if plan is not None and (plan.summary or plan.notes):
        lines += ["", "The plan:", ""]
        if plan.summary:
            lines.append(f"- {plan.summary}")
        lines += [f"- {n}" for n in plan.notes if n]
    return lines + [""]
