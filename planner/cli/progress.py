"""Render pipeline events on stderr: a progress bar with the time left on a terminal, plain lines otherwise.

Both forms print one line per stage and per candidate result, each after the time elapsed ('[0:42]').
On a terminal a bar below them shows the stage or candidate, done/total, the time elapsed and the time
left: against `--budget` when one was given, else an estimate from the rate candidates finished at while
measuring. Without a terminal (CI, a pipe) nothing but plain lines is written: no bar, no control codes.
The planner's detail lines (each prediction's basis, what a plugin did) are printed only with -v.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.table import Column
from rich.text import Text

from planner.cli import progress_text as words
from planner.codec import SchemaError, from_data
from planner.events import Event
from planner.results import CandidateResult, Status
from planner.results.status_look import look

_MIN_NOTE = 16  # on a narrow terminal, an ok result's notes are left out rather than cut shorter than this


def _block_title(stage: str, total: int) -> str:
    """What a block of candidate results is, said once above its column titles ('' for a stage without one)."""
    if stage == "measure":
        return f"measuring {total} candidate{'s' if total != 1 else ''}"
    if stage == "confirm":
        leaders = "the leader" if total == 1 else f"the {total} leaders"
        return f"confirming {leaders} with the full method: the 2-second screen can misorder close ones"
    return ""


class CliProgress:
    """An event sink for the CLI; use as a context manager around the engine call.

    `budget_s` is `--budget` (the time left is shown against it); `verbose` is -v. `interactive` (whether
    to draw the bar), `console` and `clock` default to stderr being a terminal, a console on stderr and
    the monotonic clock; tests pass their own.
    """

    def __init__(self, *, enabled: bool = True, budget_s: float | None = None, verbose: bool = False,
                 interactive: bool | None = None, console: Console | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = enabled
        self.budget_s = budget_s
        self.verbose = verbose
        self.console = console or Console(stderr=True, highlight=False)
        self.interactive = enabled and (sys.stderr.isatty() if interactive is None else interactive)
        self._clock = clock
        self._start = clock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._block = ""  # the stage whose candidate results are being printed under one header
        self._measure_start: float | None = None  # when the measuring stage's first event came
        self._last_done: tuple[float, int, int] | None = None  # (when, done, total) of the last measured result
        self._measuring = False
        self._said_over = False

    def __enter__(self) -> "CliProgress":
        self._start = self._clock()
        if self.interactive:
            self._progress = Progress(
                TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")),
                BarColumn(bar_width=24), _CountColumn(), _TimeColumn(self),
                console=self.console, transient=True, expand=True)
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress:
            self._progress.stop()

    # Time.

    def elapsed(self) -> float:
        """Seconds since the plan started."""
        return self._clock() - self._start

    def over_budget(self) -> bool:
        """Whether the plan has run past `--budget`."""
        return self.budget_s is not None and self.elapsed() > self.budget_s

    def time_left(self) -> str:
        """The time left as the bar shows it: against the budget ('1:10 left of 1:30'), past it ('0:05 over the
        1:30 budget'), an estimate while measuring without one ('~0:40 left to measure, estimated'), or ''."""
        if self.budget_s is not None:
            left = self.budget_s - self.elapsed()
            if left >= 0:
                return f"{words.clock(left)} left of {words.clock(self.budget_s)}"
            return f"{words.clock(-left)} over the {words.clock(self.budget_s)} budget"
        estimate = self._estimate()
        return "" if estimate is None else f"~{words.clock(estimate)} left to measure, estimated"

    def _estimate(self) -> float | None:
        """Seconds the measuring stage still needs at the rate its candidates have finished so far; None
        outside it or before its first result."""
        if not self._measuring or self._last_done is None or self._measure_start is None:
            return None
        when, done, total = self._last_done
        if done <= 0 or done >= total:
            return None
        per_candidate = (when - self._measure_start) / done
        return max(when + per_candidate * (total - done) - self._clock(), 0.0)

    def time_text(self) -> Text:
        """The bar's time column: elapsed, then the time left (red once past the budget)."""
        text = Text(words.clock(self.elapsed()))
        left = self.time_left()
        if left:
            text.append("  ")
            text.append(left, style="bold red" if self.over_budget() else "cyan")
        return text

    # Events.

    def __call__(self, event: Event) -> None:
        if not self.enabled:
            return
        self._track(event)
        kind = event.kind
        if kind == "stage":
            self._block = ""
            left = f"  ({self.time_left()})" if self.budget_s is not None and not self.interactive else ""
            self._line(Text(event.message + left))
        elif kind in ("candidate", "candidate_done"):
            if event.stage != self._block:
                self._block = event.stage
                self._header(event)
            if kind == "candidate_done":
                self._result(event)
            elif self.verbose:
                self._line(Text(f"… {event.message}", style="dim"))
        elif kind == "stage_done":
            self._line(Text(event.message.strip()))
        elif kind == "warning":
            self._line(Text.assemble(("warning: ", "bold yellow"), event.message))
        elif kind == "budget":
            cut = str(event.data.get("cut") or event.message)
            self._line(Text.assemble(("budget cut: ", "bold yellow"), cut))
        elif self.verbose:  # "log" and any kind this version does not know: detail
            self._line(Text(event.message.strip(), style="dim"))
        if self.over_budget() and not self._said_over:
            self._said_over = True
            assert self.budget_s is not None
            self._line(Text(f"the plan has run past its {words.clock(self.budget_s)} budget", style="bold red"))
        self._advance(event)

    def _track(self, event: Event) -> None:
        """Keep what the time-left estimate needs: when measuring began and when its last result came."""
        measuring = event.stage == "measure"
        if event.kind == "stage":
            self._measuring = False
        elif measuring and event.kind in ("candidate", "candidate_done"):
            if not self._measuring:
                self._measuring, self._measure_start, self._last_done = True, self._clock(), None
            if event.kind == "candidate_done" and event.index is not None and event.total:
                self._last_done = (self._clock(), event.index, event.total)
        elif event.kind in ("candidate", "candidate_done"):
            self._measuring = False

    def _header(self, event: Event) -> None:
        """A block of candidate results starts: what it is, then the column titles."""
        title = _block_title(event.stage, event.total or 0)
        if title and event.total:
            self._line(Text(title))
        titles = " " * words.TIME_W + words.header()
        if self.interactive and not self.verbose and len(titles) > self.console.width:
            titles = titles.removesuffix("note").rstrip()  # no room for the notes on this terminal
        self._line(Text(titles, style="bold"), stamp=False, one_line=True)

    def _result(self, event: Event) -> None:
        """A finished candidate's line (its event's message when the event carries no result).

        On a terminal too narrow for the whole line the columns stay whole: why a candidate failed, was
        rejected or was skipped goes on a second line under it, and an ok one's notes (accuracy, a
        confirmation) are cut at the edge, or left out where less than a few words would fit; -v wraps
        the line whole.
        """
        try:
            result = from_data(event.data, CandidateResult)
        except (SchemaError, TypeError):
            result = None
        if result is None or not result.label:
            self._line(Text(event.message.strip()))
            return
        line = words.result_line(result, index=event.index, total=event.total, verbose=self.verbose)
        status = str(result.status)
        start = line.index(status)  # the column after the count
        text = Text(line)
        text.stylize(look(result.status).style, start, start + len(status))
        room = self.console.width - words.TIME_W - len(line)
        if not self.interactive or self.verbose or room >= 0:
            self._line(text)
            return
        columns = len(words.result_columns(result, index=event.index, total=event.total))
        if result.status is Status.OK:
            notes_room = self.console.width - words.TIME_W - (max(columns, words.NOTE_COL) + 2)
            self._line(text if notes_room >= _MIN_NOTE else text[:columns], one_line=True)
            return
        self._line(text[:columns], one_line=True)
        indent = words.TIME_W + line.index(result.label)
        self._line(Text(" " * indent + line[columns:].strip(), style="dim"), stamp=False, one_line=True)

    def _line(self, text: Text, *, stamp: bool = True, one_line: bool = False) -> None:
        """One line after the elapsed time: plain on a pipe, styled above the bar on a terminal (where a
        `one_line` one is cut at the terminal's width instead of wrapped)."""
        if stamp:
            text = Text.assemble((words.stamp(self.elapsed()) + " ", "dim"), text)
        if self.interactive:
            if one_line:
                self.console.print(text, no_wrap=True, overflow="ellipsis")
            else:
                self.console.print(text)
        else:
            # Straight to the stream: no wrapping at 80 columns, no control codes, and flushed so that a
            # reader at the other end of a pipe sees each line as it happens.
            stream = sys.stderr
            stream.write(text.plain + "\n")
            stream.flush()

    def _advance(self, event: Event) -> None:
        """The bar follows the latest stage or candidate; a stage with no count pulses."""
        if self._progress is None:
            return
        fields: dict = {}
        if event.kind in ("stage", "candidate"):
            fields["description"] = event.message
        if event.total:
            fields.update(total=event.total, completed=event.index or 0)
        if not fields:
            return
        if self._task is not None and event.kind == "stage" and not event.total:
            # rich's update() cannot take a count away (total=None means "unchanged"): a new task pulses.
            self._progress.remove_task(self._task)
            self._task = None
        if self._task is None:
            self._task = self._progress.add_task(fields.pop("description", ""), total=fields.pop("total", None),
                                                 completed=fields.pop("completed", 0))
        if fields:
            self._progress.update(self._task, **fields)


class _CountColumn(ProgressColumn):
    """done/total of the current stage; empty while a stage has no count."""

    def render(self, task: Task) -> Text:
        """The count, as '3/18'."""
        if task.total is None:
            return Text("")
        return Text(f"{int(task.completed)}/{int(task.total)}")


class _TimeColumn(ProgressColumn):
    """The plan's elapsed time and time left, from the progress sink's own clock."""

    def __init__(self, owner: CliProgress) -> None:
        super().__init__()
        self.owner = owner

    def render(self, task: Task) -> Text:
        """Elapsed, then the time left."""
        return self.owner.time_text()
