"""The plan's time budget (`planner plan --budget`): how much is left, and what running out cut; and how long the
plan took.

The budget caps the whole plan, from loading the model to writing the report. Profiling the
baseline cannot be cut (every speedup is over it), so a budget smaller than that is refused up
front; everything after it (building, screening, confirming, the interaction study) asks the
budget first and, when it cannot afford a step, records what was cut and why.

A plan run in one go (`planner plan`, `Budget.for_plan`) took its wall time. A plan run step by step (the TUI's,
`stepwise`) waits for its user between steps, for minutes at times: it took what its measuring steps took
(`Budget.timed`), each counted once for the model now loaded (a step run again replaces its time; a new model
starts afresh).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from planner.errors import PlannerError
from planner.events import Event
from planner.results.values import BudgetRecord

MIN_BUDGET_S = 20.0
"""The smallest budget a plan accepts: loading a model, the hardware's ceilings and one baseline timing
take about this long on a 2-core CPU for a small model (the demos); less would measure nothing."""

QUICK_BUDGET_S = 80.0
"""A quick plan's budget when `--budget` is not given, so that a quick plan answers in about a minute and a half
on any machine (its Python start-up comes before the budget's clock). Without it, the time grew with the machine:
demo:inefficient's quick plan took 77 s on a 2-core AMD EPYC, 197 s on a 2-vCPU Intel Xeon and 208 s on a slower
2-core EPYC VM, screening all 22 candidates each time; under it the screen takes what can end ranked first and
each runtime's most promising setting before its others (planner.pipeline.search.screen_order)."""

QUICK_DEFAULT_BASIS = ("the quick plan's default; give --budget to change it, or plan without --quick to "
                       "measure everything")
"""How the report says the budget was the quick plan's default, not one the user gave."""

REPORT_RESERVE_S = 3.0
"""Kept back for ranking, writing results.json, the deploy package and the report after the last measurement."""


def plan_budget_s(budget_s: float | None, *, quick: bool) -> float | None:
    """The plan's cap in seconds: the one given, else QUICK_BUDGET_S for a quick plan, else none."""
    if budget_s is None and quick:
        return QUICK_BUDGET_S
    return budget_s


@dataclass
class Budget:
    """A running clock against an optional cap. With no cap every question answers yes."""

    budget_s: float | None = None
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    cut: list[str] = field(default_factory=list)
    basis: str = ""  # where the cap came from when the user did not give it ('' for --budget)
    stepwise: bool = False  # a plan run step by step: it took its steps' times, not the wall time since it started
    steps: dict[str, float] = field(default_factory=dict)  # seconds each measuring step took (a plan step by step)

    @classmethod
    def for_plan(cls, budget_s: float | None, *, quick: bool) -> "Budget":
        """The budget a plan runs under: `--budget` when given, else the quick plan's default (see plan_budget_s)."""
        cap = plan_budget_s(budget_s, quick=quick)
        return cls(cap, basis=QUICK_DEFAULT_BASIS if budget_s is None and cap is not None else "")

    def __post_init__(self) -> None:
        if self.budget_s is not None and self.budget_s < MIN_BUDGET_S:
            raise PlannerError(
                f"a budget of {self.budget_s:g} s is too small: a plan needs at least {MIN_BUDGET_S:g} s to load "
                "the model, measure the hardware and time the baseline",
                f"give --budget {MIN_BUDGET_S:g}s or more (90s is enough for a quick plan of a small model)")
        self.started = self.clock()

    @property
    def capped(self) -> bool:
        """Whether a budget was given."""
        return self.budget_s is not None

    def spent(self) -> float:
        """Seconds since the plan started."""
        return self.clock() - self.started

    def left(self) -> float:
        """Seconds left before the cap (infinite without one), the report's reserve already taken out."""
        if self.budget_s is None:
            return float("inf")
        return self.budget_s - REPORT_RESERVE_S - self.spent()

    def affords(self, seconds: float) -> bool:
        """Whether a step expected to take `seconds` still fits."""
        return seconds <= self.left()

    def cut_step(self, what: str, why: str) -> str:
        """Record that `what` was not done for lack of time; returns the sentence recorded."""
        sentence = f"{what}: {why}" if why else what
        self.cut.append(sentence)
        return sentence

    def event(self, sentence: str) -> Event:
        """The progress event that says the budget cut something (`sentence`, from cut_step)."""
        return Event("budget", sentence, data={"budget_s": self.budget_s, "spent_s": self.spent(), "cut": sentence})

    def out_of_time(self) -> str:
        """Why a step was cut, in the words the report uses."""
        return (f"the {self.budget_s:g} s budget had {max(self.left(), 0.0):.0f} s left "
                f"after {self.spent():.0f} s")

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Time one measuring step ("profile", "optimize", "packages"); its time replaces the step's last one."""
        start = self.clock()
        yield  # a step that fails records no time: what it measured is not in the results
        self.steps[step] = self.clock() - start

    def forget(self, *steps: str) -> None:
        """Drop the times of steps whose results are gone (measured again, or for another model)."""
        for step in steps:
            self.steps.pop(step, None)

    def record(self) -> BudgetRecord:
        """What results.json keeps: the cap, the time spent so far and every cut. A plan run step by step spent what
        its measuring steps took, with each step's time beside it."""
        if not self.stepwise:
            return BudgetRecord(budget_s=self.budget_s, spent_s=round(self.spent(), 1), cut=tuple(self.cut),
                                basis=self.basis)
        return BudgetRecord(budget_s=self.budget_s, spent_s=round(sum(self.steps.values()), 1), cut=tuple(self.cut),
                            basis=self.basis, steps={step: round(s, 1) for step, s in self.steps.items()})
