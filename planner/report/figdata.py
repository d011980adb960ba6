"""What each figure plots, read from results.json without matplotlib, so the Markdown can say
which figures exist (and why one is missing) and the drawing code plots exactly the same data."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.report.data import ReportData, as_dict, as_list, latency, p50, text
from planner.report.fmt import real

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
    for pair in (as_dict(p) for p in as_list(data.results.get("interactions"))):
        by = {text(c.get("cell")): c for c in (as_dict(c) for c in as_list(pair.get("cells")))}
        cell = {name: real(by.get(name, {}).get("p50_ms")) for name in ("baseline", "architecture", "hardware",
                                                                        "combined")}
        if all(v is None for v in cell.values()):
            continue
        arch, hw = text(pair.get("architecture")) or "architecture change", text(pair.get("hardware")) or "runtime"
        factor, verdict = real(pair.get("factor")), text(pair.get("verdict"))
        result = f"factor {factor:.2f}: {verdict}" if factor is not None else "factor not computed"
        out.append(InteractionBars(title=f"{arch} x {hw}\n{result}", groups=("original architecture", arch),
                                   runtimes=("baseline runtime", hw),
                                   p50_ms=((cell["baseline"], cell["hardware"]),
                                           (cell["architecture"], cell["combined"]))))
    return out


def _label(entry: dict, data: ReportData) -> str:
    label = text(entry.get("label")) or text(entry.get("runtime")) or text(entry.get("plugin"))
    return label or ("baseline" if data.is_reference(entry) else "candidate")


def _timed(data: ReportData) -> list[dict]:
    """Candidates with a measured p50; the baseline profile alone when no candidate list exists."""
    timed = [c for c in data.candidates if p50(c) is not None]
    if not timed and p50(data.baseline) is not None:
        timed = [data.baseline]
    return timed


def latency_series(data: ReportData) -> list[LatencySeries]:
    """Latency summaries to plot, baseline first."""
    out = []
    for c in _timed(data):
        lat = latency(c)
        pcts = {p: v for p in PERCENTILES if (v := real(lat.get(f"{p}_ms"))) is not None}
        out.append(LatencySeries(label=_label(c, data), status=text(c.get("status")) or "ok",
                                 is_reference=data.is_reference(c) or c is data.baseline,
                                 min_ms=real(lat.get("min_ms")), max_ms=real(lat.get("max_ms")),
                                 percentiles=pcts))
    return out


def throughput_series(data: ReportData) -> list[ThroughputSeries]:
    """Throughput sweeps to plot: every candidate with one (the baseline profile's if none)."""
    sources = [c for c in data.candidates if as_list(c.get("throughput"))]
    if not sources and as_list(data.baseline.get("throughput")):
        sources = [data.baseline]
    out = []
    for c in sources:
        pts = []
        for p in as_list(c.get("throughput")):
            batch, sps = real(as_dict(p).get("batch")), real(as_dict(p).get("samples_per_s"))
            if batch is not None and sps is not None and batch > 0 and sps > 0:
                pts.append((batch, sps))
        if pts:
            out.append(ThroughputSeries(label=_label(c, data),
                                        is_reference=data.is_reference(c) or c is data.baseline,
                                        points=sorted(pts), knee=real(c.get("knee_batch"))))
    return out


def layer_key(layer: dict) -> str:
    """A layer's unique label (module path with #n for repeated calls)."""
    return text(layer.get("key")) or text(layer.get("name"))


def layer_verdict(data: ReportData, layer: dict) -> dict:
    """The roofline verdict recorded for a layer ({} when none)."""
    verdicts = data.baseline.get("layer_verdicts")
    if isinstance(verdicts, dict):
        for key in (layer_key(layer), text(layer.get("name"))):
            if isinstance(verdicts.get(key), dict):
                return verdicts[key]
        return {}
    for v in as_list(verdicts):
        if isinstance(v, dict) and text(v.get("layer")) in (layer_key(layer), text(layer.get("name"))):
            return v
    return {}


def peak_fp32(data: ReportData) -> tuple[float | None, str]:
    """The fp32 peak FLOP/s (or the first precision listed) and its precision name."""
    peaks = as_dict(data.ceilings.get("peak_flops"))
    if real(peaks.get("fp32")):
        return real(peaks["fp32"]), "fp32"
    for name, value in peaks.items():
        if real(value):
            return real(value), str(name)
    return None, ""


def roofline(data: ReportData) -> Roofline | None:
    """Layers with FLOPs and a measured time, against the measured ceilings; None if absent."""
    peak, precision = peak_fp32(data)
    bw = real(data.ceilings.get("bandwidth_bytes_per_s"))
    if not peak or not bw or peak <= 0 or bw <= 0:
        return None
    points = []
    for layer in as_list(data.baseline.get("layers")):
        layer = as_dict(layer)
        fl, t, ai = real(layer.get("flops")), real(layer.get("time_ms")), real(layer.get("intensity"))
        if fl and t and ai and fl > 0 and t > 0 and ai > 0 and math.isfinite(ai):
            points.append(RooflinePoint(name=layer_key(layer), intensity=ai, attained=fl / (t / 1e3),
                                        bound=text(layer_verdict(data, layer).get("bound"))))
    if not points:
        return None
    bn = as_dict(data.baseline.get("bottleneck"))
    fps = real(data.baseline.get("flops_per_sample"))
    model_ai = real(bn.get("intensity"))
    attained = real(bn.get("attained_flops_per_s"))
    if attained is None and fps and data.base_p50:
        attained = fps / (data.base_p50 / 1e3)
    model_point = None
    if model_ai and attained and model_ai > 0 and attained > 0:
        model_point = RooflinePoint("whole model", model_ai, attained, text(bn.get("bound")))
    others = tuple((str(name), value) for name, raw in as_dict(data.ceilings.get("peak_flops")).items()
                   if str(name) != precision and (value := real(raw)) is not None and value > 0)
    return Roofline(points=points, peak_flops=peak, peak_label=precision, bandwidth=bw,
                    model_point=model_point, other_roofs=others)


def candidate_bars(data: ReportData) -> list[tuple[str, float, str]]:
    """(label, p50 ms, status) for every candidate with a measured p50."""
    return [(_label(c, data), ms, text(c.get("status")) or "ok")
            for c in data.candidates if (ms := p50(c)) is not None]


def missing_reason(data: ReportData, name: str) -> str | None:
    """Why a figure cannot be drawn from these results, or None when its data is there."""
    if name == LATENCY:
        return None if latency_series(data) else (
            "no latency was measured (" + data.missing("the baseline timing") + ")")
    if name == THROUGHPUT:
        return None if throughput_series(data) else (
            "no batch sweep was recorded" + ("" if data.baseline else " (" + data.missing("the baseline") + ")"))
    if name == ROOFLINE:
        if not data.ceilings:
            return "no ceilings were recorded (" + data.missing("measuring the ceilings") + ")"
        if roofline(data) is None:
            return ("no layer has both FLOPs and a measured time against positive ceilings, "
                    "so there is nothing to place on the roofline")
        return None
    if name == CANDIDATES:
        bars = candidate_bars(data)
        if not bars:
            return "no candidate has a measured latency (" + data.missing("measuring candidates") + ")"
        if all(data.is_reference(c) for c in data.candidates if p50(c) is not None):
            return "only the baseline was measured, so there is nothing to compare it with"
        return None
    if name == INTERACTION:
        if not as_list(data.results.get("interactions")):
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
        source = text(data.ceilings.get("source")) or "source not recorded"
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

