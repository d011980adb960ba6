"""The nine steps of the method as the TUI shows them: number, id, title, and which of the session's
steps each one shows (the session says which of those are done; the TUI never decides it)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.pipeline.steps import Step as SessionStep


@dataclass(frozen=True)
class Step:
    """One step in the sidebar: its number key, the pane id, the title, and when it reads as done.

    It is done when the session has every one of `shows` done (`PlanSession.done_steps()`) and, for
    a step that only shows what an earlier one made (`seen`), once the user has looked at it.
    """

    number: int
    id: str
    title: str
    shows: tuple[SessionStep, ...]
    seen: bool = False


STEPS: tuple[Step, ...] = (
    Step(1, "hardware", "Hardware", (SessionStep.HARDWARE,)),
    Step(2, "model", "Model", (SessionStep.MODEL,)),
    Step(3, "requirements", "Requirements", (SessionStep.REQUIREMENTS,), seen=True),
    Step(4, "profile", "Profile", (SessionStep.PROFILE,)),
    Step(5, "checklist", "Checklist", (SessionStep.CHECKLIST, SessionStep.PLAN)),
    Step(6, "tree", "Decision tree", (SessionStep.CHECKLIST, SessionStep.PLAN), seen=True),
    Step(7, "optimize", "Optimize", (SessionStep.OPTIMIZE,)),
    Step(8, "results", "Results", (SessionStep.OPTIMIZE,), seen=True),
    Step(9, "report", "Report", (SessionStep.REPORT,)),
)

STEP_BY_ID: dict[str, Step] = {s.id: s for s in STEPS}
