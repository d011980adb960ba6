"""Step 8, Results: every candidate in a sortable table, plots of p50 and throughput, and the details of one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.widget import Widget
from textual.widgets import DataTable, Label, Static, TabbedContent, TabPane, Tabs

from planner.measure.pool import pool_sentence
from planner.results import CandidateResult, Prediction, energy_view, fidelity_view, names, roof_share
from planner.results.audit import flag_line, load_summary
from planner.results.counts import CandidateCounts
from planner.results.interaction import Interaction
from planner.results.rows import CandidateRow, candidate_rows
from planner.results.status_look import look
from planner.results.values import Fidelity
from planner.results.view import check_on_your_data, not_established_why, unconfirmed_lead, unconfirmed_term
from planner.tui import formatting as fmt
from planner.tui.screens.base import StepPane
from planner.tui.widgets.plots import BarChart
from planner.tui.widgets.table import cells

PLOT_LABEL_WIDTH = 18
_UNSET = object()
NO_TABLES = ("No interaction, compression or device-target table in this run. The interaction table (an "
             "architecture change and a runtime, measured alone and together) appears when the Optimize step "
             "measures an architecture change beside the best runtime; compression and device targets appear "
             "for an edge plan (or a ternary candidate).")
"""What the More tables tab says when the run has none of them."""




@dataclass(frozen=True)
class Column:
    """A results column: header, width, how to show a row, and its sort key (None sorts last)."""

    key: str
    header: str
    width: int
    show: Callable[[CandidateRow], str]
    sort: Callable[[CandidateRow], Any]
    descending: bool = False  # bigger is better: the first sort puts the largest on top
    drop: int = 0  # on a narrow screen the column with the highest `drop` goes first; 0 always stays

    @property
    def sort_name(self) -> str:
        """The column's name in the 'sorted by' line."""
        return SORT_NAMES.get(self.key, self.header)


def _lat(c: CandidateResult, p: str) -> float | None:
    return getattr(c.latency_ms, f"{p}_ms") if c.latency_ms is not None else None


def best_rate(c: CandidateResult) -> float | None:
    """The highest samples/s over the batch sweep and parallel streams, or None when none was measured."""
    peak = c.peak_rate()
    return peak.samples_per_s if peak is not None else None


# Where the measured speedup fell against the band predicted before measuring.
VERDICT_MARK = {"inside": "✓", "above": "↑", "below": "↓"}


def predicted_cell(c: CandidateResult) -> str:
    """The predicted speedup band and where the measurement fell: '1.5-4✓' (inside), '↑' above, '↓' below; '—' none."""
    p = c.prediction or Prediction()
    if p.low is None or p.high is None:
        return fmt.MISSING
    return f"{p.low:g}-{p.high:g}" + VERDICT_MARK.get(p.verdict(c.speedup), "")


def _predicted_mid(c: CandidateResult) -> float | None:
    p = c.prediction or Prediction()
    return (p.low + p.high) / 2 if p.low is not None and p.high is not None else None


def _percentile_column(p: str, drop: int) -> Column:
    return Column(p, f"{p} ms", 6, lambda r: fmt.ms(_lat(r.cand, p), unit=False), lambda r: _lat(r.cand, p),
                  drop=drop)


def status_cell(row: CandidateRow) -> str:
    """The status in short words; a measured row judged against the requirements the user set says 'meets' or
    which it misses ('miss p95,mem'), never plain 'ok' when one is missed (see requirement_verdict)."""
    status = str(row.cand.status)
    return row.verdict if status == "ok" and row.verdict else look(status).short  # the details spell it out


STATUS_MAX = 12
"""The widest the status column grows for the requirements a row misses; the details name every one."""


SPEED_WIDTH = 7
"""The speed column's width for speedups up to '0.0248x'; a smaller slowdown widens it ('0.00326x')."""


def table_columns(percentile: str | None = None, status_width: int = 4, count: int = 9,
                  speed_width: int = SPEED_WIDTH) -> tuple[Column, ...]:
    """The results columns, with `percentile` (the latency target's: 'p95' or 'p99') as the second latency column
    and never the first dropped on a narrow screen; `status_width` fits the longest status cell, the rank
    column the highest of `count` ranks, and the speed column the longest of `speed_width` characters."""
    target = percentile if percentile in ("p95", "p99") else None
    return (
        # The rank the report and the command line give (PlanResults.ranked); '—' for a candidate not ranked.
        Column("rank", "#", max(2, len(str(count))), lambda r: str(r.rank) if r.rank else fmt.MISSING,
               lambda r: r.rank),
        _percentile_column("p50", 0),
        _percentile_column(target or "p95", 0 if target else 2),
        # Energy goes first on a narrow screen; the details always say it (and why there is none).
        Column("energy", energy_view.SHORT_HEADER, 6, lambda r: energy_view.short_cell(r.cand),
               lambda r: energy_view.energy_value(r.cand), drop=4),
        Column("rate", "samp/s", 6, lambda r: fmt.rate(best_rate(r.cand), unit=False), lambda r: best_rate(r.cand),
               True),
        Column("mem", "MiB", 5, lambda r: fmt.mib(r.cand.peak_memory_bytes), lambda r: r.cand.peak_memory_bytes,
               drop=3),
        Column("speedup", "speed", max(speed_width, SPEED_WIDTH), lambda r: fmt.speedup(r.speedup),
               lambda r: r.speedup, True),
        Column("pred", "pred", 9, lambda r: predicted_cell(r.cand), lambda r: _predicted_mid(r.cand), True, drop=1),
        Column("status", "stat", min(max(4, status_width), STATUS_MAX),
               lambda r: fmt.truncate(status_cell(r), min(max(4, status_width), STATUS_MAX)),
               lambda r: (str(r.cand.status), r.verdict)),
    )


COLUMNS = table_columns()
"""The columns without a latency target at p95 or p99."""
COLUMN_BY_KEY = {c.key: c for c in (*COLUMNS, _percentile_column("p99", 0))}
SORT_NAMES = {"rank": "rank", "p50": "p50", "p95": "p95", "p99": "p99", "energy": "energy per inference",
              "rate": "throughput", "mem": "memory", "speedup": "speedup",
              "pred": "predicted speedup", "status": "status"}
SORT_CYCLE = (*(c.key for c in COLUMNS), "p99")
MIN_LABEL = 16
"""The narrowest the candidate column may get before lower-priority columns are dropped (see Column.drop)."""


def fixed_width(columns: tuple[Column, ...]) -> int:
    """What the numeric columns take: each cell starts with one space, the label's space, the 2-column scrollbar."""
    return sum(c.width + 1 for c in columns) + 1 + 2


def visible_columns(width: int, columns: tuple[Column, ...] = COLUMNS) -> tuple[Column, ...]:
    """The columns that fit `width` with a readable candidate label; the details panel shows the dropped ones."""
    while width - fixed_width(columns) < MIN_LABEL and any(c.drop for c in columns):
        first = max(columns, key=lambda c: c.drop)
        columns = tuple(c for c in columns if c is not first)
    return columns


def sorted_candidates(candidates: list[CandidateRow], key: str, reverse: bool) -> list[tuple[int, CandidateRow]]:
    """(index, row) pairs ordered by a column; missing values always sort last."""
    column = COLUMN_BY_KEY[key]
    present = [(i, c) for i, c in enumerate(candidates) if column.sort(c) is not None]
    missing = [(i, c) for i, c in enumerate(candidates) if column.sort(c) is None]
    present.sort(key=lambda pair: column.sort(pair[1]), reverse=reverse)
    return present + missing


# The requirement checks' names as the status column says them (the latency one says its percentile).
_MISS_WORDS = {"throughput": "rate", "memory": "mem", "model_size": "size", "accuracy": "acc"}


def requirement_verdict(checks: Any, percentile: str) -> str:
    """'meets' when a row meets every requirement the user set ('met at p50' when the latency was judged on the
    median only, as the report words it), 'miss p95,mem' naming those it misses (an impossible one is missed
    too; the latency by `percentile`, the one it was judged on), '' when none was set or one could not be judged
    and none missed."""
    from planner.results.decisions import CheckStatus

    missed = [percentile if check.name == "latency" else _MISS_WORDS.get(check.name, check.name)
              for check in checks if check.met is False]
    if missed:
        return "miss " + ",".join(missed)
    if not checks or not all(check.met for check in checks):
        return ""
    return "met at p50" if any(check.status == CheckStatus.MET_AT_P50 for check in checks) else "meets"


def requirement_lines(checks: Any) -> str:
    """Each requirement the user set, against this candidate, in the report's words ('' when none was set)."""
    return "; ".join(f"{check.name.replace('_', ' ')}: {check.margin}" for check in checks)


def interaction_detail(c: CandidateResult, pairs: Sequence[Interaction]) -> Text:
    """The 2x2 interaction table of each pair this candidate is part of (architecture or hardware side)."""
    from planner.report.sections.interaction import cell_text, factor_line, retraining_sentence

    text = Text()
    for pair in pairs:
        if c.label not in (pair.architecture, pair.hardware):
            continue
        other = pair.hardware if c.label == pair.architecture else pair.architecture
        text.append(f"\ninteraction with {other}:", style="bold")
        for name in ("baseline", "architecture", "hardware", "combined"):
            text.append(f"\n  {name:<12} {cell_text(pair.cell(name))}")
        text.append("\n  " + factor_line(pair).replace("**", ""))
        if pair.needs_retraining:
            # Said of the redesign by name: on the runtime's side of the pair it is the other candidate's.
            text.append("\n  " + retraining_sentence(pair, pair.architecture))
    return text


def candidate_detail(c: CandidateResult, index: int, interactions: Sequence[Interaction] = (), *,
                     rank: int | None = None, verdict: str = "") -> Text:
    """Everything about one candidate: status and reason, numbers, fidelity, config and how to reproduce it.
    `rank` is its rank (None: not ranked), `verdict` its status against the user's requirements."""
    text = Text()
    text.append(c.label, style="bold")
    ranked = f"rank {rank}" if rank else "not ranked"
    # Against the requirements the user set (see requirement_verdict): a missed one is never hidden behind "ok".
    judged = {"": "", "meets": " · meets your requirements"}.get(verdict, " · " + verdict.replace("miss ", "misses "))
    # The candidate in plain words where its plugin declared them (older files: the label says it all).
    title = names.title(c)
    facts = [title] if title != c.label else []
    facts += [str(c.precision), f"{c.status}{judged}", ranked] + (["the baseline"] if index == 0 else [])
    text.append("\n" + " · ".join(facts))
    if c.reason:
        # The report's words for a recorded reason ("fidelity check: ..., below the 0.995 needed");
        # imported here because the report package is slow to import at start-up.
        from planner.report.fmt import plain_reason

        text.append(f"\nreason: {plain_reason(c.reason)}", style="bold")
    lat = c.latency_ms
    if lat is not None:
        text.append("\nlatency: " + ", ".join(f"{p} {fmt.ms(getattr(lat, f'{p}_ms'))}" for p in ("p50", "p95", "p99"))
                    + f" ({lat.samples} samples{', unstable' if lat.unstable else ''})")
        text.append(f"\n{fmt.tui_words(energy_view.energy_detail(c))}")
    roof = roof_share.phrase(c.roof_share)
    if roof:
        text.append(f"\nroof: {fmt.tui_words(roof)}")
    confirmation = c.confirmation
    if confirmation is not None:
        agreed = "reproduced" if confirmation.reproduced else "did not reproduce"
        text.append(f"\nconfirmed with the full method: the 2-second screen read "
                    f"{fmt.ms(confirmation.screen_p50_ms)}, {agreed} within 10%"
                    + (f" — {confirmation.note}" if confirmation.note else ""))
    prediction = c.prediction or Prediction()
    if prediction.low is not None and prediction.high is not None:
        fell = {"inside": "inside the band", "below": "below it", "above": "above it"}.get(
            prediction.verdict(c.speedup), "")
        held = f" — measured {fmt.speedup(c.speedup)}, {fell}" if fell else ""
        text.append(f"\npredicted before measuring: {fmt.speedup(prediction.low)} to "
                    f"{fmt.speedup(prediction.high)}{held} ({prediction.basis})")
    if c.throughput:
        text.append("\nthroughput: " + ", ".join(f"batch {p.batch} {fmt.rate(p.samples_per_s)}" for p in c.throughput))
    streams = c.streams
    if streams:
        text.append(f"\nparallel streams at batch {streams[0].batch}: "
                    + "; ".join(("one request at a time" if p.streams == 1 else f"{p.streams} at once")
                                + f" {fmt.rate(p.samples_per_s)}" for p in streams)
                    + (f" ({streams[-1].basis})" if len(streams) > 1 and streams[-1].basis else ""))
    if c.peak_memory_bytes is not None:
        text.append(f"\nmemory: {fmt.size(c.peak_memory_bytes)}" + (f" ({c.memory_basis})" if c.memory_basis else ""))
    if c.size_bytes is not None:
        text.append(f"\nsize: {fmt.size(c.size_bytes)}")
    if c.fidelity is not None:
        text.append(f"\nfidelity: {', '.join(fidelity_parts(c.fidelity)) or 'not compared'}")
    if c.audit is not None:
        text.append(f"\nenvironment: {flag_line(c.audit) or 'no interference seen; ' + load_summary(c.audit)}",
                    style="bold" if c.audit.disturbed else "")
    if interactions:
        text.append_text(interaction_detail(c, interactions))
    if c.config:
        text.append(f"\nconfig: {config_words(c.config)}")
    if c.reproduce:
        text.append("\nreproduce: ", style="bold")
        text.append(c.reproduce)
    if c.pipeline is not None and c.pipeline.pipeline:
        text.append("\nyour request end to end: ", style="bold")
        text.append(c.pipeline.sentence("this candidate"))
    pool = pool_sentence(c.info.get("input_pool")) if lat is not None else ""
    if pool:
        text.append(f"\ntiming: {pool}", style="dim")
    return text


def config_words(config: dict[str, Any]) -> str:
    """A candidate's settings as 'name value; ...', each name in a reader's words (planner.results.names.field); a
    runtime's own constant (ORT_ENABLE_ALL) stays as it is, to look up."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        return v if isinstance(v, str) else json.dumps(v, default=str)

    return "; ".join(f"{names.field(k)} {value(v)}" for k, v in sorted(config.items()))


def fidelity_parts(fid: Fidelity) -> list[str]:
    """A candidate's fidelity in the report's words (fidelity_view.facts): a dense map, a sequence or a regression
    output by its own test, class scores by cosine, top-1 agreement and their largest difference."""
    parts = ["the reference"] if fid.reference else []
    parts += fidelity_view.facts(fid, centered=True)
    if not fidelity_view.phrases(fid) and fid.max_abs_error is not None:
        parts.append(f"largest difference {fidelity_view.small(fid.max_abs_error)}")
    return parts


def unconfirmed_line(candidates: list[CandidateRow], best_label: str | None, best_speedup: float | None) -> str:
    """'Best confirmed: A at 1.64x · Up to 3.9x (B) if it holds on your data: re-run with --val-data DIR' when a
    candidate not established on real data beats the best confirmed one; '' otherwise."""
    lead = unconfirmed_lead((r.cand for r in candidates), best_speedup)  # the report's rule and words
    if lead is None:
        return ""
    confirmed = f"Best confirmed: {best_label} at {fmt.speedup(best_speedup)} · " if best_label else ""
    # A candidate the check could not judge says so; one that drifted keeps the line's short words.
    why = (not_established_why(lead) if lead.fidelity is not None and lead.fidelity.cannot_judge
           else "it drifted from the original on generated inputs only")
    return f"{confirmed}{check_on_your_data(lead)} ({unconfirmed_term(lead)}: {why})"


def plot_series(candidates: list[CandidateRow],
                value: Callable[[CandidateResult], float | None]) -> tuple[list[str], list[float]]:
    """(labels, values) in rank order (unranked after), for candidates that have the value."""
    ordered = sorted(candidates, key=lambda r: (r.rank is None, r.rank or 0))
    # Shortened together, so different candidates never read the same (see fmt.short_labels).
    short = fmt.short_labels([r.cand.label for r in ordered], PLOT_LABEL_WIDTH).labels
    pairs = [(label, v) for label, r in zip(short, ordered) if (v := value(r.cand)) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def deploy_lines(deployments: list[Any], verdicts: list[Any]) -> Text:
    """What `r` wrote and found: per role its candidate and folder and each check passed or failed, then what a
    failed check found (the details panel is small: passing checks stay one word)."""
    text = Text()
    by_folder = {Path(v.folder).name: v for v in verdicts}
    for record in deployments:
        if not record.folder:
            text.append(f"{record.role}: no package — {record.reason}\n", style="bold")
            continue
        text.append(f"{record.role}: {record.label} → {record.folder}", style="bold")
        # A phase's best that is the winner points at the winner's folder: its checks are shown once.
        verdict = by_folder.pop(record.folder.rsplit("/", 1)[-1], None)
        if verdict is None:
            text.append(f" ({record.reason})\n" if record.reason else "\n")
            continue
        text.append(": " + " · ".join(f"{c.name} {'pass' if c.passed else 'FAIL'}" for c in verdict.checks) + "\n")
        for check in verdict.checks:
            if not check.passed:
                text.append(f"  {check.name}: {check.detail}\n", style="bold red")
    return text


class ResultsPane(StepPane):
    """The candidates table (click a header or press o to sort), two plots, and a details panel; `r` writes the
    hand-over packages and verifies them."""

    STEP_ID = "results"
    RUN_LABEL = "Write and verify the hand-over packages"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET
        self._sort = "rank"  # the report's order first; o or a header click picks another
        self._reverse = False
        self._label_width = 0
        self._candidates: list[CandidateRow] = []
        self._columns: tuple[Column, ...] = COLUMNS
        self._short = fmt.short_labels([], 0)
        self._checks: list[tuple[Any, ...]] = []  # per candidate, the checks of the requirements the user set
        self._all_columns: tuple[Column, ...] = COLUMNS  # before a narrow screen drops any
        self._width = 80  # the pane's, when the table was last fitted
        self._deploying = False  # `r` is writing and verifying the packages

    def compose(self) -> ComposeResult:
        """Table (with details) and two plot tabs."""
        with TabbedContent(id="results-tabs"):
            with TabPane("Table", id="tab-table"):
                yield Label("Run the Optimize step (7) to measure candidates.", id="sorted", classes="hint")
                yield Label("", id="headline")
                yield Static("", id="deploy-status")
                yield DataTable(id="candidates", cursor_type="row", zebra_stripes=True, cell_padding=0)
                with VerticalScroll(id="detail-box"):
                    yield Static("", id="candidate-detail")
            # A chart is one row per candidate: with more candidates than rows, it scrolls.
            with TabPane("p50 plot", id="tab-p50"):
                with VerticalScroll():
                    yield BarChart(id="p50-plot")
            with TabPane("Throughput plot", id="tab-rate"):
                with VerticalScroll():
                    yield BarChart(id="rate-plot")
            with TabPane("More tables", id="tab-tables"):
                with VerticalScroll(id="tables-box"):
                    yield Static(NO_TABLES, id="extra-tables")

    def sync(self) -> None:
        """Rebuild when the candidate list changed (a new run, or a new measurement)."""
        results = self.session.results
        llm = self.session.state.llm is not None
        stamp = (results.candidates, results.ranking, results.interactions, results.edge_device, results.target,
                 results.requirements, llm)
        if stamp == self._shown:
            return
        self._shown = stamp
        if not self._deploying:
            # New candidates or ranking: the packages written for the old ones are out of date.
            self.query_one("#deploy-status", Static).display = False
        self._judge()
        self._fill_table(keep_cursor=False)
        self._fill_headline()
        self._fill_plots()
        self._fill_tables()
        if not self._candidates:
            self.query_one("#sorted", Label).update(
                "A language model's candidates are on step 7, its report on step 9."
                if llm else "Run the Optimize step (7) to measure candidates.")
            self.query_one("#candidate-detail", Static).update("")

    def _judge(self) -> None:
        """Check every measured candidate against the requirements the user set, as the report checks the best
        one (planner.pipeline.session.requirement_checks); the planner's defaults alone change nothing here."""
        from planner.advice.checks import requirement_checks
        from planner.results.decisions import SOURCE_FILE, SOURCE_FLAG

        results = self.session.results
        reqs = results.requirements
        stated = reqs is not None and reqs.stated
        # Only a latency target the user set keeps its percentile's column, as only such a target ranks by it.
        percentile = (str(reqs.latency_percentile) if reqs is not None and reqs.latency_ms is not None
                      and reqs.source("latency_ms") in (SOURCE_FLAG, SOURCE_FILE) else None)
        self._checks, verdicts = [], []
        for c in results.candidates:
            checks: tuple[Any, ...] = ()
            if stated and reqs is not None and c.status == "ok" and c.latency_ms is not None:
                checks = tuple(check for check in requirement_checks(results, reqs, subject=c)
                               if check.source in (SOURCE_FLAG, SOURCE_FILE))
            self._checks.append(checks)
            # A row whose target percentile was not measured (too few samples) was judged on its p50: the status
            # names the column that holds the number it was judged on, never a p95 shown as '—'.
            judged_on = percentile if percentile is not None and _lat(c, percentile) is not None else "p50"
            verdicts.append(requirement_verdict(checks, judged_on))
        # In the order measured: the table sorts itself, and a row's index is where its checks are.
        self._candidates = sorted(candidate_rows(results, verdicts), key=lambda row: row.index)
        widest = max((len(status_cell(c)) for c in self._candidates), default=4)
        speed = max((len(fmt.speedup(c.speedup)) for c in self._candidates), default=SPEED_WIDTH)
        self._all_columns = table_columns(percentile, widest, len(self._candidates), speed)

    def on_key(self, event: events.Key) -> None:
        """↓ on the tab bar steps into the tab it shows (the table's rows on the Table tab) instead of doing nothing;
        from there ↓ moves through the rows."""
        focused = self.screen.focused
        if event.key != "down" or not isinstance(focused, Tabs) or self not in focused.ancestors:
            return
        shown = self.query_one(TabbedContent).active_pane
        target = next((w for w in shown.query("*") if w.focusable), None) if shown is not None else None
        if target is not None:
            # Now, not after this message (Widget.focus waits): the ↓s typed after this one go to the rows.
            self.screen.set_focus(target)
            event.stop()

    def on_resize(self) -> None:
        """Give the label column the new width."""
        self._fit_labels()

    def on_show(self) -> None:
        """A table filled while this step was hidden had no width to fit: fit it now."""
        self._fit_labels()

    def _fit_labels(self) -> None:
        shown = self._columns
        if self._candidates and (self._label_column_width() != self._label_width or self._columns != shown):
            self._fill_table()

    def _label_column_width(self) -> int:
        # The label gets what the shown numeric columns leave (fixed_width); a narrow pane drops some.
        # A step that has never been shown has no size yet; the pane area it will fill has.
        width = self.size.width or (self.parent.content_size.width if isinstance(self.parent, Widget) else 0)
        self._width = width
        self._columns = visible_columns(width, self._all_columns)
        return max(12, width - fixed_width(self._columns))

    def _fill_table(self, *, keep_cursor: bool = True) -> None:
        """Rebuild the table in the current order (keeping the highlighted candidate when asked)."""
        table = self.query_one("#candidates", DataTable)
        highlighted = None
        if keep_cursor and table.row_count and table.cursor_row < table.row_count:
            highlighted = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        table.clear(columns=True)
        self._label_width = self._label_column_width()
        columns = self._columns
        right = tuple(range(1, len(columns)))  # numbers align right; label and status left
        headers = cells("candidate", *(c.header for c in columns), right=right)
        table.add_column(headers[0], width=self._label_width + 1, key="label")
        for column, header in zip(columns, headers[1:]):
            table.add_column(header, width=column.width + 1, key=column.key)
        if self._sort not in {c.key for c in self._all_columns}:
            self._sort, self._reverse = "rank", False  # the target's percentile changed: its column went
        rows = sorted_candidates(self._candidates, self._sort, self._reverse)
        self._short = fmt.short_labels([r.cand.label for r in self._candidates], self._label_width)
        for index, c in rows:
            table.add_row(*cells(self._short.labels[index],
                                 *(col.show(c) for col in columns), right=right), key=str(index))
        arrow = "↓" if self._reverse else "↑"
        if self._candidates:
            self.query_one("#sorted", Label).update(self._sorted_line(arrow))
        if highlighted is not None:
            row = [str(i) for i, _ in rows].index(highlighted) if highlighted in {str(i) for i, _ in rows} else 0
            table.move_cursor(row=row)
        elif rows:
            table.move_cursor(row=0)
            self._show_detail(rows[0][0])

    def _sorted_line(self, arrow: str) -> str:
        """'8 candidates measured · sorted by rank (p95 latency) ↑ · o or a header click sorts', shortened to fit (the
        counts are the report's, planner.results.counts)."""
        name = COLUMN_BY_KEY[self._sort].sort_name
        ranking = self.session.results.ranking
        if self._sort == "rank" and ranking is not None and ranking.by:
            # The report's rule in short: 'p95 latency (the latency target's percentile)' -> 'p95 latency'.
            name = f"rank ({ranking.by.split(' (')[0].split(' at ')[0]})"
        line = f"{CandidateCounts.of(self.session.results).words(why=False)} · sorted by {name} {arrow}"
        for tail in (" · o or a header click sorts", " · o sorts", ""):
            if len(line + tail) <= self._width - 2:  # the pane's padding
                return line + tail
        return line

    def _fill_headline(self) -> None:
        """The best confirmed candidate and a faster one not established on real data, shown only when there is one."""
        results = self.session.results
        best = results.best
        line = unconfirmed_line(self._candidates, best.label if best is not None else None,
                                best.speedup if best is not None else None)
        headline = self.query_one("#headline", Label)
        headline.update(line)
        headline.display = bool(line)

    def _fill_plots(self) -> None:
        # The words the plots' short labels share or abbreviate, as the table's details say them.
        legend = fmt.short_labels([r.cand.label for r in self._candidates], PLOT_LABEL_WIDTH).legend()
        labels, values = plot_series(self._candidates, lambda c: _lat(c, "p50"))
        self.query_one("#p50-plot", BarChart).plot(
            labels, values, title="p50 latency per candidate, ms (lower is better)", unit="ms",
            show=lambda v: fmt.ms(v, unit=False), note=legend)
        labels, values = plot_series(self._candidates, best_rate)
        self.query_one("#rate-plot", BarChart).plot(
            labels, values, title="best throughput, samples/s (higher is better)", unit="samples/s",
            show=lambda v: fmt.rate(v, unit=False), note=legend)

    def _fill_tables(self) -> None:
        """The interaction, compression and device-target tables, in the report's own words."""
        box = self.query_one("#extra-tables", Static)
        if len(self._candidates) < 2:  # nothing optimized yet: no table can exist (and no slow import)
            box.update(NO_TABLES)
            return
        # Imported here: the report package is slow to import, and start-up never needs it.
        from planner.report.tables import extra_tables_markdown
        from planner.tui.widgets.markdown_tables import markdown_with_tables

        markdown = extra_tables_markdown(self.session.results)
        box.update(markdown_with_tables(markdown) if markdown else NO_TABLES)

    # -- hand-over packages (r) ----------------------------------------------------------------
    def run_step(self) -> None:
        """Write deploy/ for the winner and each phase's best, then verify each package in a fresh process."""
        if self.session.results.ranking is None or self.session.results.best is None:
            self.notify("Nothing ranked yet: run the Optimize step (7) first.", title="No package to write",
                        severity="warning", timeout=5)
            return
        if self.start("deploy", self._deploy):
            self._deploying = True
            self._show_deploy(Text("writing the hand-over packages, then verifying each one (a few seconds each)…"))

    @work(thread=True, exclusive=True, exit_on_error=False, name="deploy", group="deploy")
    def _deploy(self) -> None:
        if self.session.out_dir is None:
            self.session.set_out_dir(self.planner.out_dir)
        deployments = self.session.deploy()
        checked = self.session.verify()
        self.report("deploy", {"deployments": list(deployments), "verdicts": list(checked.verdicts),
                               "root": checked.root})

    def job_done(self, job: str, result: Any) -> None:
        """Show each package and its checks."""
        if job != "deploy":
            return
        self._deploying = False
        verdicts = result["verdicts"]
        passed = sum(1 for v in verdicts if v.passed)
        head = Text(f"Hand-over packages: {passed} of {len(verdicts)} verified, in {result['root']}\n", style="bold")
        head.append_text(deploy_lines(result["deployments"], verdicts))
        self._show_deploy(head)

    def job_failed(self, job: str, error: BaseException) -> None:
        """A failed write or verify is shown in place too."""
        self._deploying = False
        self._show_deploy(Text(f"hand-over packages not written: {error}", style="bold red"))
        super().job_failed(job, error)

    def _show_deploy(self, text: Text) -> None:
        status = self.query_one("#deploy-status", Static)
        status.update(text)
        status.display = True

    def sort_next(self) -> None:
        """Sort by the next shown column in turn (the `o` key)."""
        shown = {c.key for c in self._columns}
        cycle = [k for k in SORT_CYCLE if k in shown or k == self._sort]
        i = cycle.index(self._sort)
        self.sort_by(cycle[(i + 1) % len(cycle)])

    def sort_by(self, key: str) -> None:
        """Sort by a column; sorting by the same column again reverses the order."""
        if key == self._sort:
            self._reverse = not self._reverse
        else:
            self._sort, self._reverse = key, COLUMN_BY_KEY[key].descending
        self._fill_table()

    @on(DataTable.HeaderSelected, "#candidates")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        key = event.column_key.value
        if key in COLUMN_BY_KEY:
            self.sort_by(key)

    @on(DataTable.RowHighlighted, "#candidates")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._show_detail(int(event.row_key.value))

    def _show_detail(self, index: int) -> None:
        if 0 <= index < len(self._candidates):
            row = self._candidates[index]
            detail = candidate_detail(row.cand, index, self.session.results.interactions, rank=row.rank,
                                      verdict=row.verdict)
            checks = self._checks[index] if index < len(self._checks) else ()
            if checks:
                missed = any(check.met is False for check in checks)
                detail.append(f"\nyour requirements: {requirement_lines(checks)}", style="bold" if missed else "")
            if self._short.legend():
                detail.append(f"\nshort labels: {self._short.legend()}", style="dim")
            self.query_one("#candidate-detail", Static).update(detail)
