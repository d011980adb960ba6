"""Check boxes whose state reads without colour: ✓ when on, blank when off (Textual's show X either way)."""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Checkbox, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

ON, OFF = "✓", " "


class Tick(Checkbox):
    """A Checkbox that draws ✓ when ticked, so NO_COLOR terminals and screen captures show its state."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802 - Textual's attribute name
        """The glyph inside the box: it follows the value."""
        return ON if self.value else OFF


class TickList(SelectionList[str]):
    """A SelectionList that draws ✓ in the box of each selected item (one line per item)."""

    def render_line(self, y: int) -> Strip:
        """Textual's line, with the box's glyph swapped for the item's state."""
        strip = super().render_line(y)
        segments = list(strip)
        if len(segments) < 2 or segments[1].text != Checkbox.BUTTON_INNER:
            return strip
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        mark = ON if option.value in self.selected else OFF
        segments[1] = Segment(mark, segments[1].style, segments[1].control)
        return Strip(segments, strip.cell_length)

    def on_resize(self) -> None:
        """Keep the highlighted item in view when the list gets fewer lines (the lines under it grew)."""
        self.scroll_to_highlight()
