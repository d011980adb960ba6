"""Time budget: what `--budget` allowed, what the plan spent, and each thing the budget left out."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData
from planner.results import BudgetRecord

STEP_WORDS = {"profile": "profiling", "optimize": "optimizing", "packages": "writing the hand-over packages"}
"""What each timed step of a plan run step by step did, as the report says it."""


def took(budget: BudgetRecord) -> str:
    """How long the plan took: a plan in one go from loading the model to writing the results; a plan run step by
    step (the TUI) what its measuring steps took, as the time between them was the user's."""
    if not budget.steps:
        return f"the plan took {fmt.seconds(budget.spent_s)}, from loading the model to writing the results"
    parts = ", ".join(f"{STEP_WORDS.get(step, step)} {fmt.seconds(s)}" for step, s in budget.steps.items())
    return (f"the plan's steps took {fmt.seconds(budget.spent_s)} ({parts}); it ran step by step, and the time "
            "between the steps, while the planner waited for you, is not counted")


def render(data: ReportData) -> list[str]:
    """The section; [] for a plan that recorded no budget (one written before budgets, or run without one)."""
    budget = data.run.budget
    if budget is None:
        return []
    lines = ["## Time budget", ""]
    lines.append((f"Budget {fmt.seconds(budget.budget_s)}" + (f" ({budget.basis})" if budget.basis else "")
                   if budget.budget_s is not None else "No time budget was given") + f"; {took(budget)}.")
    cut = [c for c in budget.cut if c]
    if cut:
        lines += ["", "What the budget left out, and why (these were not measured, so no number in this report "
                      "stands for them):", ""] + [f"- {c}" for c in cut]
    else:
        lines += ["", "The budget left nothing out."]
    return lines + [""]
