"""RunProgress and log helpers: a progress bar with the current stage, fed by engine events."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar, RichLog

from planner.events import Event


class RunProgress(Horizontal):
    """One row: a progress bar (indeterminate until the engine gives index/total) and the stage."""

    DEFAULT_CSS = """
    RunProgress { height: 1; }
    RunProgress ProgressBar { width: auto; margin-right: 1; }
    RunProgress #stage { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def compose(self) -> ComposeResult:
        """The bar and the stage line."""
        yield ProgressBar(total=None, show_eta=False, id="bar")
        yield Label("", id="stage")

    def on_mount(self) -> None:
        """No bar until a run begins."""
        self.query_one(ProgressBar).display = False

    def begin(self, message: str, total: float | None = None) -> None:
        """Start: show the bar (indeterminate when total is None) and the first stage."""
        bar = self.query_one(ProgressBar)
        bar.display = True
        bar.update(total=total, progress=0)
        self.set_stage(message)

    def set_stage(self, message: str) -> None:
        """The one-line status beside the bar."""
        self.query_one("#stage", Label).update(message)

    def apply(self, events: list[Event]) -> None:
        """Advance the bar from events that carry index/total, and show the latest stage."""
        bar = self.query_one(ProgressBar)
        for event in events:
            if event.total:
                bar.update(total=event.total, progress=event.index or 0)
            if event.kind in ("stage", "candidate"):
                self.set_stage(event.message)

    def end(self, message: str, *, ok: bool = True) -> None:
        """Stop: a full bar when the run completed, no bar when it failed or was cancelled."""
        bar = self.query_one(ProgressBar)
        if ok:
            bar.update(total=bar.total or 1, progress=bar.total or 1)
        else:
            bar.display = False
        self.set_stage(message)


def new_log(*, id: str | None = None, classes: str | None = None) -> RichLog:
    """A live log that wraps to the pane's width (RichLog's default minimum is 78 columns)."""
    return RichLog(wrap=True, markup=False, highlight=False, max_lines=2000, min_width=20,
                   id=id, classes=classes)


def log_events(log: RichLog, events: list[Event]) -> None:
    """Append engine events: stages and candidates with '…', warnings with '!', results as given."""
    for event in events:
        if event.kind in ("stage", "candidate"):
            log.write(Text(f"… {event.message}"))
        elif event.kind == "warning":
            log.write(Text(f"! {event.message}", style="bold"))
        else:
            log.write(Text(event.message.strip()))
