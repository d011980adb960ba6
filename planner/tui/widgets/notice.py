"""Notice: an in-place message under the control it is about (an error with its fix, or a hint)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from planner.errors import PlannerError
from planner.tui.formatting import tui_words


class Notice(Static):
    """Hidden until shown; errors carry the engine's problem and fix, so the user knows what to do."""

    DEFAULT_CSS = """
    Notice { height: auto; display: none; padding: 0 1; }
    Notice.-error { border-left: thick $error; color: $text-error; }
    Notice.-info { border-left: thick $accent; }
    """

    def show_error(self, problem: str, fix: str = "") -> None:
        """Show an error: 'Error: problem' and, on the next line, 'Fix: fix' (naming the TUI's controls)."""
        text = Text()
        text.append("Error: ", style="bold")
        text.append(tui_words(problem))
        if fix:
            text.append("\nFix: ", style="bold")
            text.append(tui_words(fix))
        self._show(text, "-error")

    def show_exception(self, exc: BaseException) -> None:
        """Show a PlannerError with its fix, or any other exception by type and message."""
        if isinstance(exc, PlannerError):
            self.show_error(exc.problem, exc.fix)
        else:
            self.show_error(f"{type(exc).__name__}: {exc}", "this looks like a bug in the planner: "
                            "please report it with the message above")

    def show_info(self, message: str | Text) -> None:
        """Show a neutral message."""
        self._show(message, "-info")

    def clear(self) -> None:
        """Hide the notice."""
        self.update("")
        self.display = False

    def _show(self, content: str | Text, cls: str) -> None:
        self.set_class(cls == "-error", "-error")
        self.set_class(cls == "-info", "-info")
        self.update(content)
        self.display = True
