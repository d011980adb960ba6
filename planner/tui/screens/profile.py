"""Step 4, Profile: measure the baseline in a worker, then its latency, layers and findings."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import (
    Button,
    DataTable,
    Label,
    RichLog,
    Static,
    TabbedContent,
    TabPane,
)

from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.measure.pool import pool_sentence
from planner.results import Baseline, SequencePoint, to_data
from planner.results.analysis import Finding, LayerRecord, VerdictRecord
from planner.results.audit import flag_line
from planner.tui import formatting as fmt
from planner.tui.screens.base import StepPane
from planner.tui.screens.llm import DOES_NOT_APPLY
from planner.tui.widgets.kv import KeyValues, Row
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.plots import BarChart, LineChart
from planner.tui.widgets.progress import RunProgress, log_events, new_log
from planner.tui.widgets.table import cells
from planner.tui.widgets.toggles import Tick
from planner.units import tokens_rate

PERCENTILES = ("p50", "p90", "p95", "p99")
_UNSET = object()
# The columns that decide what to optimize come first; narrow terminals scroll to the rest.
LAYER_COLUMNS = ("Layer", "ms", "Share", "Verdict", "Type", "{unit}", "FLOP/B")
NAME_WIDTH = 18


REMEASURED_CEILINGS = ("measured again since this profile (step 1): press r to profile against the new "
                       "ceilings")
"""What the Ceiling row says once the ceilings a busy machine gave were measured again after the baseline."""


def ceilings_remeasured(baseline: Baseline | None, ceilings: Any) -> bool:
    """Whether the session's ceilings changed after `baseline` was measured (the user measured them again)."""
    recorded = baseline.ceilings if baseline is not None else None
    return bool(recorded) and ceilings is not None and to_data(ceilings) != recorded


def bound_text(baseline: Baseline, *, ceilings_remeasured: bool = False) -> str:
    """The baseline's roofline explanation; its busy-ceiling warning only while those ceilings are still the ones."""
    explanation = baseline.bottleneck.explanation if baseline.bottleneck is not None else ""
    if ceilings_remeasured:
        explanation = explanation.replace(f" ({EXCEEDED_WARNING})", "")
    return fmt.tui_words(explanation)


def latency_rows(baseline: Baseline, *, ceilings_remeasured: bool = False) -> list[Row]:
    """The baseline's headline numbers as labelled rows.

    `ceilings_remeasured`: the ceilings were measured again after this baseline, so a warning that they were
    measured while the machine was busy no longer holds; the row says they changed instead.
    """
    lat = baseline.latency_ms
    rows: list[Row] = [
        ("Runtime", f"{baseline.runtime} on {baseline.device}"),
        ("Latency (ms)", " · ".join(f"{p} {fmt.ms(getattr(lat, f'{p}_ms'), unit=False)}" for p in PERCENTILES)),
    ]
    stability = "unstable" if lat.unstable else "stable"
    spread = lat.iqr_over_median
    rows.append(("Samples", f"{lat.samples}, {stability}"
                            + (f" (middle half of the samples spans {fmt.pct(spread)} of the median)"
                               if spread is not None else "")))
    best = max(baseline.throughput, key=lambda p: p.samples_per_s, default=None)
    skipped = sweep_skipped(baseline)
    if best is not None and skipped:
        rows.append(("Throughput", f"{fmt.rate(best.samples_per_s)} at batch {best.batch}, not swept: {skipped}"))
    elif best is not None:
        rows.append(("Throughput", f"best {fmt.rate(best.samples_per_s)} at batch {best.batch}"
                                   f" ({len(baseline.throughput)} batch sizes measured)"))
    rows += sequence_rows(baseline)
    rows.append(("Peak memory", f"{fmt.size(baseline.peak_memory_bytes)}"
                                + (f" ({baseline.memory_basis})" if baseline.memory_basis else "")))
    rows.append(("FLOPs/sample", fmt.flops(baseline.flops_per_sample)))
    bottleneck = baseline.bottleneck
    if bottleneck is not None and bottleneck.bound:
        unstable = not bottleneck.stable
        rows.append(("Bound", f"{bottleneck.bound}-bound" + (" (unstable)" if unstable else "")))
        if unstable:
            rows.append(("Unstable", bottleneck.unstable_reason or "the measurement was not stable"))
        efficiency = bottleneck.efficiency
        if bottleneck.ceiling_warning or (efficiency is not None and efficiency > 1.0):
            # Above 100% of the roofline is a ceiling measured while busy, never a fact to show; once the
            # ceilings were measured again, the advice to do so would send the user round in a loop.
            rows.append(("Ceiling", REMEASURED_CEILINGS if ceilings_remeasured else
                         fmt.tui_words(bottleneck.ceiling_warning or EXCEEDED_WARNING)))
        elif efficiency is not None:
            rows.append(("Efficiency", f"{fmt.pct(efficiency)} of the roofline bound"))
    return rows


def sweep_skipped(baseline: Baseline) -> str:
    """Why the baseline has no batch sweep ('' when it has one), without the engine's "no batch sweep:" lead-in."""
    reason = str(baseline.info.get("sweep_skipped") or "")
    return reason.removeprefix("no batch sweep:").strip()


def sequence_rows(baseline: Baseline) -> list[Row]:
    """A text model's latency at each sequence length measured, and why that sweep stopped early if it did."""
    points = measured_sequence(baseline)
    rows: list[Row] = []
    if points:
        fastest = max(points, key=lambda p: p.tokens_per_s)
        rows.append(("Sequence", " · ".join(f"{p.length}: {fmt.ms(p.latency_p50_ms)}" for p in points)))
        rows.append(("Tokens/s", f"best {tokens_rate(fastest.tokens_per_s)} at {fastest.length} tokens"))
    stopped = baseline.info.get("sequence_sweep_stopped")
    if stopped:
        rows.append(("", f"sequence sweep stopped: {stopped}"))
    return rows


def measured_sequence(baseline: Baseline) -> list[SequencePoint]:
    """The sequence sweep's points, shortest first."""
    return sorted(baseline.sequence_sweep, key=lambda p: p.length)


def timing_note(baseline: Baseline | None) -> str:
    """How the calls were fed (the pool of distinct inputs) and, with --pipeline, the user's request end to end."""
    from planner.results.pipeline_split import split_lines

    if baseline is None:
        return ""
    pool = pool_sentence(baseline.info.get("input_pool"))
    return "\n\n".join(p for p in (pool, "\n".join(split_lines(baseline.pipeline, None))) if p)


def percentile_bars(baseline: Baseline) -> tuple[list[str], list[float], str, str]:
    """(labels, values, title, note) for the measured percentiles; the note names unmeasured ones."""
    lat = baseline.latency_ms
    labels, values, missing = [], [], []
    for p in PERCENTILES:
        value = getattr(lat, f"{p}_ms")
        if value is None:
            missing.append(p)
        else:
            labels.append(p)
            values.append(value)
    # plotext drops a title wider than the plot, so the title stays short and the note says the rest.
    title = f"Baseline latency percentiles, ms ({lat.samples} samples)"
    note = (f"Not measured: {', '.join(missing)} (too few samples to estimate them; a full profile "
            "takes more)." if missing else "Every percentile measured.")
    return labels, values, title, note


def throughput_chart(baseline: Baseline) -> tuple[list[float], list[float], str, str, str]:
    """(xs, ys, title, x label, y label) for the Throughput tab.

    The batch sweep where one ran; a text model without one (its inputs fix the batch) shows its
    tokens per second against sequence length instead, which is the curve it does have.
    """
    batches = [float(p.batch) for p in baseline.throughput]
    rates = [p.samples_per_s for p in baseline.throughput]
    points = measured_sequence(baseline)
    if len(batches) <= 1 and points:
        return ([float(p.length) for p in points], [p.tokens_per_s for p in points],
                "Baseline throughput against sequence length", "tokens", "tokens/s")
    return batches, rates, "Baseline throughput against batch size", "batch", "samples/s"


def flop_unit(layers: tuple[LayerRecord, ...]) -> tuple[str, float]:
    """GFLOP for real models; MFLOP when every layer is below a GFLOP (small models read better)."""
    largest = max((layer.flops for layer in layers), default=0)
    return ("GFLOP", 1e9) if largest >= 1e9 else ("MFLOP", 1e6)


def layer_cells(layer: LayerRecord, verdicts: dict[str, VerdictRecord], scale: float) -> tuple[Text, ...]:
    """One layer table row: name, ms, share, roofline verdict, type, FLOPs, intensity (FLOP/byte)."""
    found = verdicts.get(layer.key)
    verdict = (found.bound if found is not None else None) or fmt.MISSING
    return cells(fmt.truncate(layer.name, NAME_WIDTH), fmt.ms(layer.time_ms, unit=False),
                 fmt.pct(layer.time_share), verdict, fmt.truncate(layer.type, 14), fmt.sig(layer.flops / scale),
                 fmt.ratio(layer.intensity), right=(1, 2, 5, 6))


def layer_detail(layer: LayerRecord, verdicts: dict[str, VerdictRecord]) -> str:
    """The highlighted layer's roofline explanation (the engine's words and numbers)."""
    found = verdicts.get(layer.key)
    return (found.explanation if found is not None else "") or f"{layer.name}: no roofline verdict"


def finding_text(finding: Finding) -> Text:
    """A finding: severity and title, its layers, the estimated impact and the advice."""
    text = Text()
    text.append(f"[{finding.severity}] ", style="bold")
    text.append(finding.title, style="bold")
    if finding.layers:
        text.append(f"\nlayers: {', '.join(finding.layers)}")
    text.append(f"\nimpact: {fmt.pct(finding.impact)} ({finding.impact_basis or 'estimate'})")
    if finding.advice:
        text.append(f"\n{finding.advice}")
    return text


def not_profiled(model: str) -> str:
    """What the Profile step says before its first profile of `model`."""
    return f"not measured yet for {model}: press r"


class ProfilePane(StepPane):
    """Runs `PlanSession.profile` (then answers the checklist) and shows the baseline."""

    STEP_ID = "profile"
    RUN_LABEL = "Run profile"

    def compose(self) -> ComposeResult:
        """Toolbar, progress, and the result tabs."""
        with Horizontal(classes="toolbar"):
            yield Button("Run profile (r)", id="run", compact=True)
            yield Tick("quick", value=True, id="quick", compact=True)
            yield Label("", id="status", classes="status")
        yield RunProgress(id="progress")
        yield Notice(id="notice")
        with TabbedContent(id="profile-tabs"):
            with TabPane("Summary", id="tab-latency"):
                with VerticalScroll():
                    yield KeyValues([("Baseline", "not measured yet: press r")], id="latency")
                    yield Static("", id="timing-note", classes="hint", markup=False)
                    yield Static("", id="bound", classes="hint")
            with TabPane("Latency", id="tab-chart"):
                yield BarChart(id="percentiles")
                yield Label("", id="percentile-note", classes="hint")
            with TabPane("Throughput", id="tab-throughput"):
                yield LineChart(id="sweep")
                yield Label("", id="sweep-note", classes="hint", markup=False)
            with TabPane("Layers", id="tab-layers"):
                yield DataTable(id="layers", cursor_type="row", zebra_stripes=True, cell_padding=0)
                yield Static("", id="layer-detail", classes="hint")
            with TabPane("Findings", id="tab-findings"):
                yield VerticalScroll(id="findings")
            with TabPane("Log", id="tab-log"):
                yield new_log(id="log")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET
        self._remeasured = False  # the ceilings shown against the baseline were measured again since
        self._layers: tuple[LayerRecord, ...] = ()
        self._verdicts: dict[str, VerdictRecord] = {}
        self._cancelled = False  # the running profile was cancelled: its failure is the cancel

    # -- actions -----------------------------------------------------------------------------
    def run_step(self) -> None:
        """Profile the loaded model."""
        if self.session.state.llm is not None:
            self.query_one(Notice).show_error(f"profiling {DOES_NOT_APPLY}", "its plan measures it: press 7, then r")
            return
        if self.session.model is None:
            self.query_one(Notice).show_error("no model is loaded", "load one in step 2 (press 2)")
            return
        quick = self.query_one("#quick", Tick).value
        self._cancelled = False
        if self.start("profile", self._profile, quick):
            self.query_one(Notice).clear()
            self.query_one(RunProgress).begin("starting the baseline…", total=4)
            self.query_one("#status", Label).update("running…")
            self.query_one("#log", RichLog).write(
                Text(f"▶ profile {self.session.model.name} ({'quick' if quick else 'full'})", style="bold"))
            self.query_one(TabbedContent).active = "tab-log"

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self.run_step()

    def cancel_step(self) -> bool:
        """Stop the profile now: its measuring process ends, and no baseline is kept from it."""
        if self.planner.job is None or self.planner.job.name != "profile":
            return False
        self._cancelled = True
        self.planner.stop_running_job()
        self.query_one("#status", Label).update("cancelling…")
        self.query_one("#log", RichLog).write(Text("! cancel requested: stopping the measurement", style="bold"))
        return True

    @on(DataTable.RowHighlighted, "#layers")
    def _layer_highlighted(self, event: DataTable.RowHighlighted) -> None:
        index = int(event.row_key.value or 0)
        if 0 <= index < len(self._layers):
            self.query_one("#layer-detail", Static).update(layer_detail(self._layers[index], self._verdicts))

    @work(thread=True, exclusive=True, exit_on_error=False, name="profile", group="profile")
    def _profile(self, quick: bool) -> None:
        baseline = self.session.profile(quick=quick)
        # The checklist's automatic answers come from the baseline, so answer it now (with the
        # user's replies so far, which the session keeps).
        self.session.decide()
        self.report("profile", baseline)

    # -- results -----------------------------------------------------------------------------
    def engine_events(self, events: list) -> None:
        """Progress bar and log from the profile's stage events."""
        self.query_one(RunProgress).apply(events)
        log_events(self.query_one("#log", RichLog), events)

    def job_done(self, job: str, result: Any) -> None:
        """The baseline is in: show it and switch to its latency tab."""
        self._cancelled = False
        lat = result.latency_ms
        message = f"baseline p50 {fmt.ms(lat.p50_ms)} over {lat.samples} samples"
        self.query_one(RunProgress).end(message)
        self.query_one("#status", Label).update("done")
        self.query_one("#log", RichLog).write(Text(f"✓ {message}", style="bold"))
        self.query_one(TabbedContent).active = "tab-latency"

    def job_failed(self, job: str, error: BaseException) -> None:
        """Say the run failed (or was cancelled), in place and in the log."""
        if self._cancelled:
            # The stopped measurement fails by design: say it was cancelled, not that it broke.
            self._cancelled = False
            self.query_one(RunProgress).end("profile cancelled: no baseline measured", ok=False)
            self.query_one("#status", Label).update("cancelled")
            self.query_one("#log", RichLog).write(Text("✗ cancelled: press r to profile again", style="bold"))
            return
        self.query_one(RunProgress).end("profile failed", ok=False)
        self.query_one("#status", Label).update("failed")
        self.query_one("#log", RichLog).write(Text(f"✗ {error}", style="bold"))
        super().job_failed(job, error)

    def forget_runs(self, model: str) -> None:
        """A new model: the last profile's line, status, interference notice and log were about the one before."""
        self._cancelled = False
        self.query_one(RunProgress).reset("" if self.session.state.llm is not None else not_profiled(model))
        self.query_one("#status", Label).update("")
        self.query_one(Notice).clear()
        self.query_one("#log", RichLog).clear()

    def sync(self) -> None:
        """Rebuild the tables and chart when the session holds a new baseline."""
        baseline = self.session.baseline
        remeasured = ceilings_remeasured(baseline, self.session.ceilings)
        llm = self.session.state.llm is not None
        if (baseline, llm) == self._shown and remeasured == self._remeasured:
            return
        self._shown, self._remeasured = (baseline, llm), remeasured
        table = self.query_one("#layers", DataTable)
        table.clear(columns=True)
        findings = self.query_one("#findings", VerticalScroll)
        if baseline is None:
            model = self.session.model
            self.query_one("#latency", KeyValues).set_rows(
                [("Baseline", not_profiled(model.source or model.name) if model is not None
                  else f"profiling {DOES_NOT_APPLY}" if llm
                  else "not measured yet: load a model (step 2), then press r")])
            self.query_one("#percentiles", BarChart).display = False
            self.query_one("#sweep", LineChart).display = False
            self.query_one("#sweep-note", Label).display = False
            self.query_one("#percentile-note", Label).update("Not measured yet: press r.")
            self.query_one("#bound", Static).update("")
            self.query_one("#timing-note", Static).display = False
            self.replace_children(findings, [])
            return
        self.query_one("#latency", KeyValues).set_rows(latency_rows(baseline, ceilings_remeasured=remeasured))
        timing = self.query_one("#timing-note", Static)
        timing.update(timing_note(baseline))
        timing.display = bool(timing_note(baseline))  # results recorded before the pool was: no empty line
        disturbed = flag_line(baseline.audit)
        if disturbed:
            self.query_one(Notice).show_info(f"The baseline was {disturbed}.")
        else:  # a banner about the baseline this one replaced (or an error before it) no longer holds
            self.query_one(Notice).clear()
        labels, values, title, note = percentile_bars(baseline)
        chart = self.query_one("#percentiles", BarChart)
        chart.display = True
        chart.plot(labels, values, title=title, unit="ms")
        self.query_one("#percentile-note", Label).update(note)
        sweep = self.query_one("#sweep", LineChart)
        sweep.display = True
        xs, ys, title, xlabel, ylabel = throughput_chart(baseline)
        sweep.plot(xs, ys, title=title, xlabel=xlabel, ylabel=ylabel)
        sweep_note = self.query_one("#sweep-note", Label)
        skipped = sweep_skipped(baseline)
        sweep_note.update(f"No batch sweep: {skipped}." if skipped else "")
        sweep_note.display = bool(skipped)
        self.query_one("#bound", Static).update(bound_text(baseline, ceilings_remeasured=remeasured))
        verdicts = baseline.layer_verdicts
        layers = baseline.layers
        unit, scale = flop_unit(layers)
        table.add_columns(*cells(*(c.format(unit=unit) for c in LAYER_COLUMNS), right=(1, 2, 5, 6)))
        for index, layer in enumerate(layers):
            table.add_row(*layer_cells(layer, verdicts, scale), key=str(index))
        self._layers, self._verdicts = layers, verdicts
        if layers:
            self.query_one("#layer-detail", Static).update(layer_detail(layers[0], verdicts))
        items = baseline.findings
        self.replace_children(findings, [Static(finding_text(f), classes="finding") for f in items] or
                              [Static("No architecture findings for this model.", classes="hint")])
