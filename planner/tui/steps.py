"""The nine steps of the method as the TUI shows them: number, id and title."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step in the sidebar: its number key, the pane id and the title."""

    number: int
    id: str
    title: str


STEPS: tuple[Step, ...] = (
    Step(1, "hardware", "Hardware"),
    Step(2, "model", "Model"),
    Step(3, "requirements", "Requirements"),
    Step(4, "profile", "Profile"),
    Step(5, "checklist", "Checklist"),
    Step(6, "tree", "Decision tree"),
    Step(7, "optimize", "Optimize"),
    Step(8, "results", "Results"),
    Step(9, "report", "Report"),
)

STEP_BY_ID: dict[str, Step] = {s.id: s for s in STEPS}
