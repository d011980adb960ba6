"""RunProgress and log helpers: one progress bar over a whole run with the phase under way, fed by engine events."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Self

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Resize
from textual.widgets import Label, ProgressBar, RichLog

from planner.events import Event


@dataclass(frozen=True)
class Phase:
    """A part of a run, as the bar shows it: its name, and the share of the bar it fills (start to end, 0-1).

    `counted` phases say which of their items is under way ("measuring candidates 3/9"); `drop` are the
    leading words of the engine's messages that the phase's name already says.
    """

    name: str
    start: float
    end: float
    counted: bool = False
    drop: tuple[str, ...] = ()


OPTIMIZE_PHASES = {
    "candidates": Phase("building the candidates", 0.0, 0.05, drop=("building candidates: ",)),
    "measure": Phase("measuring candidates", 0.05, 0.75, counted=True, drop=("measuring ",)),
    "confirm": Phase("confirming the leaders", 0.75, 0.9, drop=("confirming ",)),
    "interaction": Phase("measuring the interaction cells", 0.9, 1.0, drop=("interaction: ",)),
}
"""An optimize run's phases in the order the engine runs them (planner.pipeline.candidates, .interaction)."""


class RunProgress(Horizontal):
    """One row for a whole run: a bar that never goes back, and the phase under way beside it.

    The bar is indeterminate until the engine gives a count. A pane names its run's phases (engine event
    stages) and the share of the bar each fills; a stage the pane does not name gives counts over the
    whole run (the profile's do). A phase without counts shows its name and leaves the bar where it was.
    """

    DEFAULT_CSS = """
    RunProgress { height: 1; }
    RunProgress ProgressBar { width: auto; margin-right: 1; }
    /* A short bar: at 80x24 the phase's name and its item need most of the row. */
    RunProgress ProgressBar Bar { width: 12; }
    RunProgress #stage { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, *, phases: dict[str, Phase] | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.phases = dict(phases or {})
        self.done = 0.0  # the share of the run done so far (0-1): the bar never shows less

    def compose(self) -> ComposeResult:
        """The bar and the stage line."""
        yield ProgressBar(total=None, show_eta=False, id="bar")
        yield Label("", id="stage")

    def on_mount(self) -> None:
        """No bar until a run begins."""
        self.query_one(ProgressBar).display = False

    def begin(self, message: str, total: float | None = None) -> None:
        """Start a run at 0: the bar waits for counts (indeterminate) unless `total` says the run is counted."""
        bar = self.query_one(ProgressBar)
        bar.display = True
        self.done = 0.0
        bar.update(total=None if total is None else 100, progress=0)
        self.set_stage(message)

    def set_stage(self, message: str) -> None:
        """The one-line status beside the bar."""
        self.query_one("#stage", Label).update(message)

    def advance(self, share: float) -> None:
        """Show at least `share` (0-1) of the run done; a smaller share (a phase counting from 0 again) is ignored."""
        self.done = max(self.done, min(max(share, 0.0), 1.0))
        self.query_one(ProgressBar).update(total=100, progress=round(self.done * 100, 1))

    def apply(self, events: list[Event]) -> None:
        """Advance the bar from the events' counts, and name the phase under way."""
        for event in events:
            phase = self.phases.get(event.stage)
            counted = event.total is not None and event.total > 0 and event.index is not None
            if counted and phase is not None:
                self.advance(phase.start + (phase.end - phase.start) * (event.index or 0) / (event.total or 1))
            elif counted:
                self.advance((event.index or 0) / (event.total or 1))
            if event.kind in ("stage", "candidate"):
                self.set_stage(stage_line(event, phase))

    def reset(self, message: str = "") -> None:
        """No run: no bar, and `message` (what has not run yet) beside where it would be."""
        self.done = 0.0
        self.query_one(ProgressBar).display = False
        self.set_stage(message)

    def end(self, message: str, *, ok: bool = True) -> None:
        """Stop: a full bar when the run completed, no bar when it failed or was cancelled."""
        bar = self.query_one(ProgressBar)
        if ok:
            self.done = 1.0
            bar.update(total=100, progress=100)
        else:
            bar.display = False
        self.set_stage(message)


def stage_line(event: Event, phase: Phase | None) -> str:
    """The line beside the bar: the phase's name (with which item, in a counted phase), then what it does now."""
    if phase is None:
        return event.message
    name = phase.name
    if phase.counted and event.total and event.index is not None:
        name += f" {min(event.index + 1, event.total)}/{event.total}"
    detail = event.message
    for lead in phase.drop:
        if detail.startswith(lead):
            detail = detail[len(lead):]
            break
    return f"{name}: {detail}" if detail else name


class PaneLog(RichLog):
    """A RichLog that wraps to its pane's width, also for lines written while its step is not on screen.

    RichLog wraps each line once, when written, to the width it has then: a hidden step has none, so lines
    written while the user looked at another step wrapped at the 20-column minimum for good. This log
    wraps those to the width it had when last shown, and wraps every line again when its width changes.
    """

    def __init__(self, *, max_lines: int, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(wrap=True, markup=False, highlight=False, max_lines=max_lines, min_width=20,
                         id=id, classes=classes)
        self._entries: deque[object] = deque(maxlen=max_lines)  # what was written, to wrap again
        self._wrapped_at = 0  # the width the lines were wrapped to (0: not yet known)
        self._rewrapping = False

    def write(self, content: object, width: int | None = None, expand: bool = False, shrink: bool = True,
              scroll_end: bool | None = None, animate: bool = False) -> Self:
        """Add a line (wrapped to the log's width), remembering it so that it can be wrapped again."""
        if not self._size_known:
            # RichLog keeps it until the log has a size, then writes it here again: remembered then.
            return super().write(content, width, expand, shrink, scroll_end, animate)
        if not self._rewrapping:
            self._entries.append(content.copy() if isinstance(content, Text) else content)
        if width is None:
            shown = self.scrollable_content_region.width
            # Hidden, the log has no region: wrap to the width it had when last laid out.
            width = shown or (self._wrapped_at or None)
            if shown:
                self._wrapped_at = shown
        return super().write(content, width, expand, shrink, scroll_end, animate)

    def clear(self) -> Self:
        """Remove every line."""
        self._entries.clear()
        return super().clear()

    def on_resize(self, event: Resize) -> None:
        """Wrap every line again at the new width (a wider terminal, or the pane's layout changed)."""
        width = self.scrollable_content_region.width
        if not self._size_known or not width or width == self._wrapped_at:
            return  # RichLog's own handler writes what waited for the first size
        self._wrapped_at = width
        self.lines.clear()
        self._line_cache.clear()
        self._start_line = 0
        self._widest_line_width = 0
        self._rewrapping = True
        try:
            for entry in self._entries:
                super().write(entry, width, scroll_end=False)
        finally:
            self._rewrapping = False
        self.scroll_end(animate=False, immediate=False, x_axis=False)


def new_log(*, id: str | None = None, classes: str | None = None) -> RichLog:
    """A live log that wraps to the pane's width (RichLog's default minimum is 78 columns)."""
    return PaneLog(max_lines=2000, id=id, classes=classes)


def log_events(log: RichLog, events: list[Event]) -> None:
    """Append engine events: stages and candidates with '…', warnings with '!', results as given."""
    for event in events:
        if event.kind in ("stage", "candidate"):
            log.write(Text(f"… {event.message}"))
        elif event.kind == "warning":
            log.write(Text(f"! {event.message}", style="bold"))
        else:
            log.write(Text(event.message.strip()))
