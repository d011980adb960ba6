"""EngineStopped: the engine process died (a crash, the OOM killer, a signal); say what ran and what was kept."""

from __future__ import annotations

import json
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


def kept_text(out_dir: Path | None) -> str:
    """What the dead engine left on disk: results.json and how many candidates it holds, or that nothing was."""
    if out_dir is None:
        return "Nothing was written yet: no output folder had been chosen (the profile and optimize choose one)."
    path = out_dir / "results.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"Nothing was kept: {path} was not written yet."
    candidates = data.get("candidates") or []
    measured = max(0, len(candidates) - 1)  # the first is the baseline
    baseline = "the baseline" if data.get("baseline") else "no baseline"
    return f"Kept in {path}: {baseline} and {measured} candidate{'s' if measured != 1 else ''} measured."


class EngineStopped(ModalScreen[bool]):
    """Returns True to restart the engine (and load the model again), False to look around first."""

    BINDINGS = [Binding("r", "answer(True)", "Restart engine"), Binding("escape", "answer(False)", "Close")]

    def __init__(self, problem: str, running: str | None, kept: str) -> None:
        super().__init__()
        self._problem = problem
        self._job = running
        self._kept = kept

    def compose(self) -> ComposeResult:
        """What happened, what was kept, and the choices."""
        with Vertical(id="confirm-box"):
            yield Label(f"The planner engine stopped{f' ({self._job})' if self._job else ''}", classes="title")
            yield Static(f"{self._problem[:1].upper()}{self._problem[1:]}.\n{self._kept}\n"
                         "Restarting starts a fresh engine and loads the model from the Model step again; "
                         "what was measured before stays on disk.", id="engine-stopped-text")
            with Horizontal(classes="buttons"):
                yield Button("Restart engine (r)", id="restart", variant="primary", compact=True)
                yield Button("Close (esc)", id="close", compact=True)

    def on_mount(self) -> None:
        """Focus Restart: it is what the user most likely wants."""
        self.query_one("#restart", Button).focus()

    def action_answer(self, restart: bool) -> None:
        """Close with the answer."""
        self.dismiss(restart)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "restart")
