"""What each figure plots, read from the typed results without matplotlib, so the Markdown can say
which figures exist (and why one is missing) and the drawing code plots exactly the same data."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.report.data import ReportData
from planner.results import Baseline, CandidateResult
from planner.results.analysis import LayerRecord
from planner.results.values import LatencyStats

LATENCY, THROUGHPUT, ROOFLINE, CANDIDATES = "latency", "throughput", "roofline", "candidates"
INTERACTION = "interaction"
FIGURES: tuple[str, ...] = (LATENCY, THROUGHPUT, ROOFLINE, CANDIDATES, INTERACTION)
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
    return cand.label or cand.plugin or ("baseline" if data.is_reference_cand(cand) else "candidate")


def _latency_series(label: str, status: str, is_reference: bool, lat: LatencyStats) -> LatencySeries:
    marks = (("p50", lat.p50_ms), ("p90", lat.p90_ms), ("p95", lat.p95_ms), ("p99", lat.p99_ms))
    return LatencySeries(label=label, status=status, is_reference=is_reference, min_ms=lat.min_ms,
                         max_ms=lat.max_ms, percentiles={p: v for p, v in marks if v is not None})


def latency_series(data: ReportData) -> list[LatencySeries]:
    """Latency summaries to plot, baseline first: every candidate with a measured p50 (the baseline profile
    alone when none has one)."""
    out = [_latency_series(_label(data, c), str(c.status), data.is_reference_cand(c), c.latency_ms)
           for c in data.run.candidates if c.latency_ms is not None]
    base = data.run.baseline
    if not out and base is not None:
        out.append(_latency_series(base.runtime or "baseline", "ok", True, base.latency_ms))
    return out


def _throughput_series(label: str, is_reference: bool, entry: CandidateResult | Baseline) -> ThroughputSeries | None:
    pts = sorted((float(p.batch), p.samples_per_s) for p in entry.throughput if p.batch > 0 and p.samples_per_s > 0)
    if not pts:
        return None
    knee = float(entry.knee_batch) if entry.knee_batch is not None else None
    return ThroughputSeries(label=label, is_reference=is_reference, points=pts, knee=knee)


def throughput_series(data: ReportData) -> list[ThroughputSeries]:
    """Throughput sweeps to plot: every candidate with one (the baseline profile's if none)."""
    swept = [c for c in data.run.candidates if c.throughput]
    series = [_throughput_series(_label(data, c), data.is_reference_cand(c), c) for c in swept]
    base = data.run.baseline
    if not swept and base is not None and base.throughput:
        series = [_throughput_series(base.runtime or "baseline", True, base)]
    return [s for s in series if s is not None]


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


def candidate_bars(data: ReportData) -> list[tuple[str, float, str]]:
    """(label, p50 ms, status) for every candidate with a measured p50."""
    return [(_label(data, c), c.latency_ms.p50_ms, str(c.status))
            for c in data.run.candidates if c.latency_ms is not None]


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
    if name == CANDIDATES:
        if not candidate_bars(data):
            return "no candidate has a measured latency (" + data.missing("measuring candidates") + ")"
        if all(data.is_reference_cand(c) for c in data.run.candidates if c.latency_ms is not None):
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
        return ("Throughput (samples/s) against batch size for each candidate with a batch sweep; "
                "the ringed point is that candidate's knee.")
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
    if name == CANDIDATES:
        return ("Median (p50) latency per candidate, coloured by status; candidates that failed "
                "have no latency and appear only in the table.")
    if name == INTERACTION:
        return ("Median (p50) latency of the four cells of each pair: the original and the changed "
                "architecture, each on the baseline runtime and on the chosen technique; the title gives "
                "the interaction factor and its verdict. A cell that was not measured has no bar.")
    raise KeyError(name)


def title(name: str) -> str:
    """The figure's alt text."""
    return {LATENCY: "Latency distribution", THROUGHPUT: "Throughput against batch size",
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

