"""TooSmall: the message that replaces the UI while the terminal is below the minimum size."""

from __future__ import annotations

from textual.widgets import Static

MIN_WIDTH = 80
MIN_HEIGHT = 24


def too_small_text(width: int, height: int) -> str:
    """The message for a terminal of this size."""
    return (f"Terminal too small:\nenlarge to at least {MIN_WIDTH}×{MIN_HEIGHT} "
            f"(now {width}×{height})\n\nq quits")


def is_too_small(width: int, height: int) -> bool:
    """Whether the planner's layout cannot fit."""
    return width < MIN_WIDTH or height < MIN_HEIGHT


class TooSmall(Static):
    """The size message, centred in the space it is given."""

    DEFAULT_CSS = """
    TooSmall {
        width: 1fr;
        height: 1fr;
        content-align: center middle;
        text-align: center;
        text-style: bold;
        padding: 1 2;
    }
    """

    def show_size(self, width: int, height: int) -> None:
        """Say the current size."""
        self.update(too_small_text(width, height))
