"""What each figure plots, read from the typed results without matplotlib, so the Markdown can say
which figures exist (and why one is missing) and the drawing code plots exactly the same data."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner import units
from planner.report.data import ReportData
from planner.report.fidelity_verdict import Verdict, verdict
from planner.results import Baseline, CandidateResult, names
from planner.results.analysis import LayerRecord
from planner.results.decisions import SOURCE_FILE, SOURCE_FLAG
from planner.results.values import LatencyStats

LOG_SPAN = 10.0
"""Values whose largest is more than this many times their smallest are drawn on a log axis."""

TARGET_REACH = 3.0
"""A target line further than this factor beyond every bar is said at the axis's edge rather than drawn."""

DECISION, LATENCY, THROUGHPUT, ROOFLINE, CANDIDATES = "decision", "latency", "throughput", "roofline", "candidates"
INTERACTION = "interaction"
FIGURES: tuple[str, ...] = (DECISION, LATENCY, THROUGHPUT, ROOFLINE, CANDIDATES, INTERACTION)
"""Figure names; each is written to figures/<name>.png."""

PERCENTILES: tuple[str, ...] = ("p50", "p90", "p95", "p99")
"""The latency percentiles the distribution figure marks, where measured."""


@dataclass(frozen=True)
class LatencySeries:
    """One candidate's latency summary: min, max and whichever percentiles were measured."""

    label: str
    status: str
    is_reference: bool
    min_ms: float | None
    max_ms: float | None
    percentiles: dict[str, float]


@dataclass(frozen=True)
class ThroughputSeries:
    """One candidate's throughput against batch size."""

    label: str
    is_reference: bool
    points: list[tuple[float, float]]
    knee: float | None


@dataclass(frozen=True)
class RooflinePoint:
    """A layer on the roofline: intensity (FLOP/byte) and attained FLOP/s."""

    name: str
    intensity: float
    attained: float
    bound: str


@dataclass(frozen=True)
class Roofline:
    """The layers to plot with the ceilings they are drawn against."""

    points: list[RooflinePoint]
    peak_flops: float
    peak_label: str
    bandwidth: float
    model_point: RooflinePoint | None
    # The other precisions' compute roofs (bf16, int8, ...) as (precision, peak): a quantized layer's ceiling.
    other_roofs: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class InteractionBars:
    """One architecture x hardware pair as grouped bars: p50 per architecture, one bar per runtime."""

    title: str
    groups: tuple[str, str]  # original architecture, changed architecture
    runtimes: tuple[str, str]  # baseline runtime, chosen hardware technique
    p50_ms: tuple[tuple[float | None, float | None], tuple[float | None, float | None]]  # [group][runtime]


def interaction_bars(data: ReportData) -> list[InteractionBars]:
    """Each measured interaction pair's four cells (a cell not measured is None), with its factor and verdict."""
    out = []
    for pair in data.run.interactions:
        by = {c.cell: c.p50_ms for c in pair.cells}  # a cell listed twice: the last one, as the file reads
        cell = {name: by.get(name) for name in ("baseline", "architecture", "hardware", "combined")}
        if all(v is None for v in cell.values()):
            continue
        arch, hw = pair.architecture or "architecture change", pair.hardware or "runtime"
        result = f"factor {pair.factor:.2f}: {pair.verdict}" if pair.factor is not None else "factor not computed"
        out.append(InteractionBars(title=f"{arch} x {hw}\n{result}", groups=("original architecture", arch),
                                   runtimes=("baseline runtime", hw),
                                   p50_ms=((cell["baseline"], cell["hardware"]),
                                           (cell["architecture"], cell["combined"]))))
    return out


def _label(data: ReportData, cand: CandidateResult) -> str:
    """The name a figure prints: the plain title its plugin declared, else its label (older files)."""
    if not (cand.label or cand.plugin or (cand.declared is not None and cand.declared.title)):
        return "baseline" if data.is_reference_cand(cand) else "candidate"
    return names.title(cand)


def _latency_series(label: str, status: str, is_reference: bool, lat: LatencyStats) -> LatencySeries:
    marks = (("p50", lat.p50_ms), ("p90", lat.p90_ms), ("p95", lat.p95_ms), ("p99", lat.p99_ms))
    return LatencySeries(label=label, status=status, is_reference=is_reference, min_ms=lat.min_ms,
                         max_ms=lat.max_ms, percentiles={p: v for p, v in marks if v is not None})


def latency_series(data: ReportData) -> list[LatencySeries]:
    """Latency summaries to plot: every candidate with a measured p50, the baseline first and then fastest first,
    the order a reader compares them in (the baseline profile alone when no candidate has one)."""
    out = [_latency_series(_label(data, c), str(c.status), data.is_reference_cand(c), c.latency_ms)
           for c in data.run.candidates if c.latency_ms is not None]
    base = data.run.baseline
    if not out and base is not None:
        out.append(_latency_series(base.runtime or "baseline", "ok", True, base.latency_ms))
    return sorted(out, key=lambda s: (not s.is_reference, s.percentiles.get("p50", math.inf)))


def _throughput_series(label: str, is_reference: bool, entry: CandidateResult | Baseline) -> ThroughputSeries | None:
    pts = sorted((float(p.batch), p.samples_per_s) for p in entry.throughput if p.batch > 0 and p.samples_per_s > 0)
    if not pts:
        return None
    knee = float(entry.knee_batch) if entry.knee_batch is not None else None
    return ThroughputSeries(label=label, is_reference=is_reference, points=pts, knee=knee)


def throughput_series(data: ReportData) -> list[ThroughputSeries]:
    """Throughput sweeps to plot: every candidate with one (the baseline profile's if none). Where some swept two
    batch sizes or more, those alone: a single point makes no curve, and a dozen of them stacked over batch 1 bury
    the curves (their rates are in the candidate table)."""
    swept = [c for c in data.run.candidates if c.throughput]
    series = [_throughput_series(_label(data, c), data.is_reference_cand(c), c) for c in swept]
    base = data.run.baseline
    if not swept and base is not None and base.throughput:
        series = [_throughput_series(base.runtime or "baseline", True, base)]
    found = [s for s in series if s is not None]
    curves = [s for s in found if len(s.points) > 1]
    return curves or found


def layer_key(layer: LayerRecord) -> str:
    """A layer's unique label (module path with #n for repeated calls)."""
    return layer.key or layer.name


def layer_bound(data: ReportData, layer: LayerRecord) -> str:
    """The bound of the roofline verdict recorded for a layer ('compute', 'memory', 'overhead'; '' when none)."""
    verdicts = data.run.baseline.layer_verdicts if data.run.baseline is not None else {}
    for key in (layer_key(layer), layer.name):
        if key in verdicts:
            return verdicts[key].bound or ""
    return ""


def peak_fp32(data: ReportData) -> tuple[float | None, str]:
    """The fp32 peak FLOP/s (or the first precision listed) and its precision name."""
    peaks = ceil.peak_flops if (ceil := data.ceilings) is not None else {}
    for name in sorted(peaks, key=lambda name: name != "fp32"):  # fp32 first, the rest as listed
        if peaks[name] and not math.isnan(peaks[name]):
            return peaks[name], name
    return None, ""


def roofline(data: ReportData) -> Roofline | None:
    """Layers with FLOPs and a measured time, against the measured ceilings; None if absent."""
    ceil, base = data.ceilings, data.run.baseline
    peak, precision = peak_fp32(data)
    if ceil is None or base is None or not peak or peak <= 0 or not ceil.bandwidth_bytes_per_s > 0:
        return None
    points = []
    for layer in base.layers:
        fl, t, ai = float(layer.flops), layer.time_ms, layer.intensity
        if fl > 0 and t and t > 0 and ai > 0 and math.isfinite(ai):
            points.append(RooflinePoint(name=layer_key(layer), intensity=ai, attained=fl / (t / 1e3),
                                        bound=layer_bound(data, layer)))
    if not points:
        return None
    bn = base.bottleneck
    model_ai = bn.intensity if bn is not None else None
    attained = bn.attained_flops_per_s if bn is not None else None
    if attained is None and base.flops_per_sample and data.base_ms:
        attained = float(base.flops_per_sample) / (data.base_ms / 1e3)
    model_point = None
    if bn is not None and model_ai and attained and model_ai > 0 and attained > 0:
        model_point = RooflinePoint("whole model", model_ai, attained, bn.bound or "")
    others = tuple((name, value) for name, value in ceil.peak_flops.items() if name != precision and value > 0)
    return Roofline(points=points, peak_flops=peak, peak_label=precision, bandwidth=ceil.bandwidth_bytes_per_s,
                    model_point=model_point, other_roofs=others)


@dataclass(frozen=True)
class LatencyTarget:
    """The latency target a figure draws as a line: its value, percentile and where it came from."""

    ms: float
    percentile: str  # 'p50', 'p95' or 'p99'
    stated: bool  # the user set it (a flag or a requirements file), not a default
    source: str  # where it came from, as recorded ('flag', 'file', or a default's label)

    @property
    def words(self) -> str:
        """The line's legend: 'your target: p95 under 50 ms', or the default's, saying the user set none."""
        where = "your target" if self.stated else "default target (you set none)"
        return f"{where}: {self.percentile} under {units.ms(self.ms)}"


@dataclass(frozen=True)
class RankedBar:
    """One measured candidate as a bar: its p50, its latency at the target's percentile, and its risk."""

    label: str
    p50_ms: float
    tail_ms: float | None  # at the target's percentile where that is not p50 and was measured, else None
    status: str
    verdict: Verdict
    speedup: float | None
    is_winner: bool  # the ranking's best: the candidate the plan ships
    is_reference: bool
    shipped: bool = False  # its package was written (the winner's deploy folder)


@dataclass(frozen=True)
class RankedBars:
    """Every measured candidate, fastest p50 first, against the latency target."""

    bars: tuple[RankedBar, ...]
    target: LatencyTarget | None
    tail: str  # the target's percentile when it is not p50 ('' otherwise): what tail_ms holds
    log_scale: bool  # the p50s and tails span more than LOG_SPAN
    # Where the target sits against the bars: 'on' the axis, or 'right'/'left' of it when drawing it there would
    # squeeze every bar into a corner (more than TARGET_REACH beyond them); '' when there is no target.
    target_side: str = ""


def latency_target(data: ReportData) -> LatencyTarget | None:
    """The latency target in force (the user's or a default), or None when there is none."""
    reqs = data.run.requirements
    if reqs is None or reqs.latency_ms is None:
        return None
    source = reqs.source("latency_ms")
    return LatencyTarget(ms=reqs.latency_ms, percentile=str(reqs.latency_percentile),
                         stated=source in (SOURCE_FLAG, SOURCE_FILE), source=source)


def spans_decades(values: list[float]) -> bool:
    """Whether positive values span more than LOG_SPAN (a log axis reads them; a linear one hides the small)."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) > LOG_SPAN * min(positive)


def ranked_bars(data: ReportData) -> RankedBars:
    """Every measured candidate (timed, and judged by the fidelity check), sorted by p50, fastest first, with
    the winner flagged and the latency target; the decision and candidates figures both plot this."""
    target = latency_target(data)
    tail = target.percentile if target is not None and target.percentile != "p50" else ""
    best = data.run.best
    packaged = {d.candidate for d in data.run.deployments if d.role == "winner" and d.folder}
    bars = []
    for cand in data.run.candidates:
        risk = verdict(cand, is_reference=data.is_reference_cand(cand))
        if cand.latency_ms is None or risk is None:
            continue
        tail_ms = getattr(cand.latency_ms, f"{tail}_ms", None) if tail else None
        bars.append(RankedBar(label=_label(data, cand), p50_ms=cand.latency_ms.p50_ms, tail_ms=tail_ms,
                              status=str(cand.status), verdict=risk, speedup=data.speedup_of(cand),
                              is_winner=cand is best, is_reference=data.is_reference_cand(cand),
                              shipped=cand is best and data.index_of(cand) in packaged))
    bars.sort(key=lambda b: b.p50_ms)
    values = [b.p50_ms for b in bars] + [b.tail_ms for b in bars if b.tail_ms]
    log_scale = spans_decades(values)
    side = ""
    if target is not None and values:
        # A linear axis starts at zero, so any target below the slowest bar is on it.
        floor = min(values) / TARGET_REACH if log_scale else 0.0
        side = ("right" if target.ms > max(values) * TARGET_REACH else "left" if target.ms < floor else "on")
    return RankedBars(bars=tuple(bars), target=target, tail=tail, log_scale=log_scale, target_side=side)


def missing_reason(data: ReportData, name: str) -> str | None:
    """Why a figure cannot be drawn from these results, or None when its data is there."""
    if name == LATENCY:
        return None if latency_series(data) else (
            "no latency was measured (" + data.missing("the baseline timing") + ")")
    if name == THROUGHPUT:
        return None if throughput_series(data) else (
            "no batch sweep was recorded"
            + ("" if data.run.baseline is not None else " (" + data.missing("the baseline") + ")"))
    if name == ROOFLINE:
        if data.ceilings is None:
            return "no ceilings were recorded (" + data.missing("measuring the ceilings") + ")"
        if roofline(data) is None:
            return ("no layer has both FLOPs and a measured time against positive ceilings, "
                    "so there is nothing to place on the roofline")
        return None
    if name == DECISION:
        return None if ranked_bars(data).bars else (
            "no candidate has a measured latency (" + data.missing("measuring candidates") + ")")
    if name == CANDIDATES:
        bars = ranked_bars(data).bars
        if not bars:
            return "no candidate has a measured latency (" + data.missing("measuring candidates") + ")"
        if all(b.is_reference for b in bars):
            return "only the baseline was measured, so there is nothing to compare it with"
        return None
    if name == INTERACTION:
        if not data.run.interactions:
            return "no architecture change was measured beside a runtime technique"
        return None if interaction_bars(data) else "no cell of any interaction pair has a measured p50"
    raise KeyError(name)


def caption(data: ReportData, name: str) -> str:
    """The figure's caption: what is plotted and what is left out."""
    if name == LATENCY:
        return ("Latency per candidate, drawn from the recorded summary statistics (min, p50, p90, "
                "p95, p99, max), not from raw samples: the line spans min to max and each marker "
                "is a percentile; a missing marker means too few samples to state it.")
    if name == THROUGHPUT:
        return ("Throughput (samples/s) against batch size for each candidate timed at two batch sizes or more "
                "(those timed at one batch size only are in the candidate table); the ringed point is the knee, past "
                "which a larger batch buys little more throughput.")
    if name == ROOFLINE:
        rl = roofline(data)
        peak = f"{rl.peak_label} peak" if rl else "peak"
        ceil = data.ceilings
        source = (ceil.source if ceil is not None else "") or "source not recorded"
        names = [name for name, _ in rl.other_roofs] if rl else []
        dashed = (f" Dashed: the {' and '.join(names)} roof{'s' if len(names) > 1 else ''}, which a layer reaches "
                  "only when it runs in that precision." if names else "")
        return (f"Roofline: each layer with FLOPs and a measured time at its intensity (FLOP/byte) "
                f"and attained FLOP/s (FLOPs / measured time), against the {peak} and the memory "
                f"bandwidth slope ({source}). Layers without FLOPs (activations, pooling, norms) "
                "cannot sit on log axes and are left out; their verdicts are in the table above." + dashed)
    if name == DECISION:
        return _decision_caption(data)
    if name == CANDIDATES:
        bars = ranked_bars(data)
        return ("Median (p50) latency per measured candidate, fastest first, coloured by status"
                + _target_and_winner(bars) + "; candidates that failed or were skipped have no latency and appear "
                "only in the table.")
    if name == INTERACTION:
        return ("Median (p50) latency of the four cells of each pair: the original and the changed "
                "architecture, each on the baseline runtime and on the chosen technique; the title gives "
                "the interaction factor and its verdict. A cell that was not measured has no bar.")
    raise KeyError(name)


def _target_and_winner(bars: RankedBars) -> str:
    """The caption's words for the target line and the winner's outline ('' for what is not drawn)."""
    words = ""
    target = bars.target
    if target is not None:
        what = "dashed line" if bars.target_side == "on" else f"red note (far off the scale to the {bars.target_side})"
        whose = (f"your latency target, {target.percentile} under {units.ms(target.ms)}" if target.stated else
                 f"a default latency target, {target.percentile} under {units.ms(target.ms)}, not set by you "
                 f"({target.source})")
        words += f"; {what}: {whose}"
    winner = next((b for b in bars.bars if b.is_winner), None)
    if winner is not None:
        words += "; outlined: the winner, the ranking's best" + (", packaged to ship" if winner.shipped else "")
    return words


def _decision_caption(data: ReportData) -> str:
    bars = ranked_bars(data)
    if any(b.tail_ms is not None for b in bars.bars):
        tail = f" Ticks: each candidate's {bars.tail}, the percentile the target applies to, where measured."
    elif bars.tail:
        tail = (f" No candidate was timed long enough to state its {bars.tail}, the percentile the target applies "
                "to; the bars are medians.")
    else:
        tail = ""
    return ("Median (p50) latency per measured candidate, fastest first, coloured by its fidelity verdict (the "
            "legend says what each means)" + _target_and_winner(bars) + "; right: p50 and speedup over the baseline."
            + (" Log axis: the values span more than tenfold." if bars.log_scale else "") + tail)


def title(name: str) -> str:
    """The figure's alt text."""
    return {DECISION: "Latency against fidelity risk", LATENCY: "Latency distribution",
            THROUGHPUT: "Throughput against batch size",
            ROOFLINE: "Roofline with the model's layers", CANDIDATES: "Candidate p50 latency",
            INTERACTION: "Interaction: the four cells' p50"}[name]


def figure_block(data: ReportData, name: str) -> list[str]:
    """The Markdown for a figure: the image and caption, or why it is not shown."""
    reason = missing_reason(data, name)
    if reason:
        return [f"*{title(name)} figure skipped: {reason}.*"]
    if data.figures is None:
        return [f"*{title(name)} figure not rendered (the report was rendered without figures).*"]
    path = data.figures.get(name)
    if not path:
        why = data.figure_notes.get(name, "it was not drawn").rstrip(".")
        return [f"*{title(name)} figure not drawn: {why}.*"]
    return [f"![{title(name)}]({path})", "", f"*Figure: {caption(data, name)}*"]

