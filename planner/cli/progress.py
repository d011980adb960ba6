"""Render pipeline events on stderr: a progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from planner.events import Event


class CliProgress:
    """An event sink for the CLI; use as a context manager around the engine call."""

    def __init__(self, *, enabled: bool = True, budget_s: float | None = None) -> None:
        self.enabled = enabled
        self.budget_s = budget_s  # `--budget`: the time left is shown against it
        self.console = Console(stderr=True, highlight=False)
        self.interactive = enabled and sys.stderr.isatty()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> "CliProgress":
        if self.interactive:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=self.console, transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress:
            self._progress.stop()

    def __call__(self, event: Event) -> None:
        if not self.enabled:
            return
        if event.kind in ("stage_done", "candidate_done", "log", "warning"):
            prefix = "warning: " if event.kind == "warning" else ""
            self.console.print(f"{prefix}{event.message}", markup=False)
        if self._progress is None:
            if event.kind in ("stage", "candidate"):
                self.console.print(f"… {event.message}", markup=False)
            return
        if event.kind in ("stage", "candidate"):
            total = event.total or 1
            done = event.index or 0
            if self._task is None:
                self._task = self._progress.add_task(event.message, total=total, completed=done)
            else:
                self._progress.update(self._task, description=event.message, total=total,
                                      completed=done)
