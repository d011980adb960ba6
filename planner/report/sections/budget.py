"""Time budget: what `--budget` allowed, what the plan spent, and each thing the budget left out."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, text


def render(data: ReportData) -> list[str]:
    """The section; [] for a plan that recorded no budget (one written before budgets, or run without one)."""
    budget = as_dict(data.results.get("budget"))
    if not budget:
        return []
    lines = ["## Time budget", ""]
    allowed = fmt.real(budget.get("budget_s"))
    spent = fmt.real(budget.get("spent_s"))
    basis = text(budget.get("basis"))
    lines.append((f"Budget {fmt.seconds(allowed)}" + (f" ({basis})" if basis else "") if allowed is not None
                  else "No time budget was given")
                 + (f"; the plan took {fmt.seconds(spent)}, from loading the model to writing the results."
                    if spent is not None else "."))
    cut = [text(c) for c in as_list(budget.get("cut")) if text(c)]
    if cut:
        lines += ["", "What the budget left out, and why (these were not measured, so no number in this report "
                      "stands for them):", ""] + [f"- {c}" for c in cut]
    else:
        lines += ["", "The budget left nothing out."]
    return lines + [""]
