"""TooSmallScreen: covers everything (modals included) while the terminal is below 80×24."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen

from planner.tui.widgets.too_small import TooSmall


class TooSmallScreen(ModalScreen[None]):
    """Shows the size message; the app pops it once the terminal is large enough again."""

    DEFAULT_CSS = """
    TooSmallScreen { background: $background; }
    TooSmallScreen TooSmall { display: block; }
    """
    BINDINGS = [Binding("q", "quit_app", "Quit")]

    def __init__(self, width: int, height: int) -> None:
        super().__init__()
        self._size_now = (width, height)
        self._quit_asked = False

    def compose(self) -> ComposeResult:
        """The size message."""
        yield TooSmall()

    def on_mount(self) -> None:
        """Show the size the screen was opened for."""
        self.show_size(*self._size_now)

    def show_size(self, width: int, height: int) -> None:
        """Update the size in the message."""
        self.query_one(TooSmall).show_size(width, height)

    def action_quit_app(self) -> None:
        """q still quits (asking first while a run is in progress)."""
        self.app.action_request_quit()  # type: ignore[attr-defined]

    def quit_pressed(self, running: str | None) -> None:
        """Quit now, or while a run is in progress, on the second q (no dialog can open over this screen)."""
        if running is None or self._quit_asked:
            self.app.stop_running_job()  # type: ignore[attr-defined]
            self.app.exit(0)
            return
        self._quit_asked = True
        self.query_one(TooSmall).update(f"{running} is in progress.\nPress q again to stop it and quit.")


def cover_if_too_small(app: App, width: int, height: int) -> None:
    """Show, update or remove the too-small screen over `app` for the terminal's size (both the planner and the
    fleet view call this on every resize)."""
    from planner.tui.widgets.too_small import is_too_small

    # Nothing opens over the too-small screen (the apps' check_action), so it is on top whenever it is up.
    covered = isinstance(app.screen, TooSmallScreen)
    if is_too_small(width, height):
        if covered:
            app.screen.show_size(width, height)  # type: ignore[attr-defined]
        else:
            app.push_screen(TooSmallScreen(width, height))
    elif covered:
        app.pop_screen()
