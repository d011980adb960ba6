"""HelpScreen: the keys, the steps, and how the planner's TUI works."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from planner.tui.steps import STEPS


def help_markdown(log_path: str | None = None) -> str:
    """The help text."""
    steps = "\n".join(f"| {s.number} | {s.title} |" for s in STEPS)
    log = (f"\n\nMessages the measuring processes print go to `{log_path}` instead of the screen."
           if log_path else "")
    return f"""\
# planner: keys

| Key | Does |
|---|---|
| 1–9 | go to a step |
| n / p | next / previous step |
| r | run this step's action (measure, load, profile, continue, optimize, save) |
| c | cancel the running optimize (after the current candidate) |
| s | save results.json and report.md (step 9) |
| o | sort the results table by the next column (step 8) |
| [ / ] | previous / next tab (steps 4 and 8) |
| Tab / Shift+Tab | move between controls; Esc returns to the step list |
| Ctrl+P | command palette: steps, actions, themes |
| ? | this help |
| q | quit (asks first while something runs) |

The mouse works everywhere: click steps, buttons, tabs and table headers (to sort).

| Step | |
|---|---|
{steps}

Every number shown comes from the engine: this machine's detection and measurements.{log}

*Esc, q or ? closes this help.*
"""


class HelpScreen(ModalScreen[None]):
    """A modal help panel."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, log_path: str | None = None) -> None:
        super().__init__()
        self._log_path = log_path

    def compose(self) -> ComposeResult:
        """The help text in a scrollable box."""
        with VerticalScroll(id="help-box"):
            yield Markdown(help_markdown(self._log_path))

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
