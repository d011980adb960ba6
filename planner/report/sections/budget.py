"""Time budget: what `--budget` allowed, what the plan spent, and each thing the budget left out."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData


def render(data: ReportData) -> list[str]:
    """The section; [] for a plan that recorded no budget (one written before budgets, or run without one)."""
    budget = data.run.budget
    if budget is None:
        return []
    lines = ["## Time budget", ""]
    lines.append((f"Budget {fmt.seconds(budget.budget_s)}" + (f" ({budget.basis})" if budget.basis else "")
                   if budget.budget_s is not None else "No time budget was given")
                 + f"; the plan took {fmt.seconds(budget.spent_s)}, from loading the model to writing the results.")
    cut = [c for c in budget.cut if c]
    if cut:
        lines += ["", "What the budget left out, and why (these were not measured, so no number in this report "
                      "stands for them):", ""] + [f"- {c}" for c in cut]
    else:
        lines += ["", "The budget left nothing out."]
    return lines + [""]
