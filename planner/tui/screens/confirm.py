"""Questions asked before something is lost: quitting while a run is in progress, or a change that throws
away measured work."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class YesNo(ModalScreen[bool]):
    """A question with two answers: y goes ahead (True), n or escape keeps things as they are (False).

    The safe answer has the focus, so Enter loses nothing by accident.
    """

    BINDINGS = [Binding("y", "answer(True)", "Go ahead"), Binding("n,escape", "answer(False)", "Keep")]

    def __init__(self, title: str, detail: str, *, go: str, keep: str) -> None:
        super().__init__()
        self._title = title
        self._detail = detail
        self._go = go
        self._keep = keep

    def compose(self) -> ComposeResult:
        """The question, what it means, and the two answers."""
        with Vertical(id="confirm-box"):
            yield Label(self._title, classes="title")
            yield Static(self._detail)
            with Horizontal(classes="buttons"):
                yield Button(self._go, id="go", variant="error", compact=True)
                yield Button(self._keep, id="keep", variant="primary", compact=True)

    def on_mount(self) -> None:
        """Focus the safe answer."""
        self.query_one("#keep", Button).focus()

    def action_answer(self, go: bool) -> None:
        """Close with the answer."""
        self.dismiss(go)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "go")


class ConfirmQuit(YesNo):
    """Returns True to quit (stopping the run), False to stay."""

    def __init__(self, running: str) -> None:
        super().__init__(f"{running} is still running.",
                         "Quit anyway? The run is stopped and its current measurement is lost; "
                         "what was already measured stays in results.json (if a folder was set).",
                         go="Quit (y)", keep="Stay (n)")


class ConfirmDiscard(YesNo):
    """Asks before a change that throws away measured work (another model, other inputs); True goes ahead."""

    def __init__(self, title: str, detail: str, *, go: str = "Load anyway (y)") -> None:
        super().__init__(title, detail, go=go, keep="Keep (n)")
