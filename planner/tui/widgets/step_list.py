"""StepList: the sidebar that shows where you are and which steps are done."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from planner.tui.steps import STEPS, Step

DONE_MARK = "✓"
OPEN_MARK = "·"


def step_prompt(step: Step, *, done: bool, current: bool) -> Text:
    """'✓ 4 Profile' — the mark says done, bold says current (both readable without colour)."""
    text = Text()
    text.append(DONE_MARK if done else OPEN_MARK, style="bold" if done else "dim")
    text.append(f" {step.number} ")
    text.append(step.title, style="bold" if current else "")
    return text


class StepList(OptionList):
    """The nine steps; choosing one (click or Enter) switches the content pane.

    The nine steps always fit, so Home, End, PageUp and PageDown scroll the step on screen instead: the
    step list has the focus after 1-9, and those keys are how a long step (the checklist) is read.
    """

    BINDINGS = [
        Binding("home", "app.scroll_step('home')", "Top of the step", show=False),
        Binding("end", "app.scroll_step('end')", "End of the step", show=False),
        Binding("pageup", "app.scroll_step('pageup')", "Page up", show=False),
        Binding("pagedown", "app.scroll_step('pagedown')", "Page down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(*(Option(step_prompt(s, done=False, current=i == 0), id=s.id)
                           for i, s in enumerate(STEPS)), id=id)
        self._done: frozenset[str] = frozenset()
        self._current = STEPS[0].id

    @property
    def done(self) -> frozenset[str]:
        """The ids of the steps marked done."""
        return self._done

    def show_state(self, *, current: str, done: set[str] | frozenset[str]) -> None:
        """Re-label the steps whose state changed and move the highlight to the current one."""
        done = frozenset(done)
        for step in STEPS:
            was = (step.id in self._done, step.id == self._current)
            now = (step.id in done, step.id == current)
            if was != now:
                self.replace_option_prompt(step.id, step_prompt(step, done=now[0], current=now[1]))
        self._done, self._current = done, current
        index = self.get_option_index(current)
        if self.highlighted != index:
            self.highlighted = index
