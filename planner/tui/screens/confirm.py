"""ConfirmQuit: asks before quitting while a run is in progress."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmQuit(ModalScreen[bool]):
    """Returns True to quit (stopping the run), False to stay."""

    BINDINGS = [Binding("y", "answer(True)", "Quit"), Binding("n,escape", "answer(False)", "Stay")]

    def __init__(self, running: str) -> None:
        super().__init__()
        self._job_title = running

    def compose(self) -> ComposeResult:
        """The question and the two answers."""
        with Vertical(id="confirm-box"):
            yield Label(f"{self._job_title} is still running.", classes="title")
            yield Static("Quit anyway? The run is stopped and its current measurement is lost; "
                         "what was already measured stays in results.json (if a folder was set).")
            with Horizontal(classes="buttons"):
                yield Button("Quit (y)", id="quit", variant="error", compact=True)
                yield Button("Stay (n)", id="stay", variant="primary", compact=True)

    def on_mount(self) -> None:
        """Focus Stay, so Enter does not quit by accident."""
        self.query_one("#stay", Button).focus()

    def action_answer(self, quit_now: bool) -> None:
        """Close with the answer."""
        self.dismiss(quit_now)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit")


class ConfirmDiscard(ModalScreen[bool]):
    """Asks before a change that throws away measured work (another model, other inputs); True goes ahead."""

    BINDINGS = [Binding("y", "answer(True)", "Go ahead"), Binding("n,escape", "answer(False)", "Keep")]

    def __init__(self, title: str, detail: str, *, go: str = "Load anyway (y)") -> None:
        super().__init__()
        self._title = title
        self._detail = detail
        self._go = go

    def compose(self) -> ComposeResult:
        """What would be lost, and the two answers."""
        with Vertical(id="confirm-box"):
            yield Label(self._title, classes="title")
            yield Static(self._detail)
            with Horizontal(classes="buttons"):
                yield Button(self._go, id="go", variant="error", compact=True)
                yield Button("Keep (n)", id="keep", variant="primary", compact=True)

    def on_mount(self) -> None:
        """Focus Keep, so Enter loses nothing by accident."""
        self.query_one("#keep", Button).focus()

    def action_answer(self, go: bool) -> None:
        """Close with the answer."""
        self.dismiss(go)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "go")
