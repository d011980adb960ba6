"""Baseline: the latency distribution, throughput against batch, memory, FLOPs and top layers."""

from __future__ import annotations

from typing import Any, Mapping

from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.measure.pool import pool_sentence
from planner.measure.stats import PERCENTILE_MIN_SAMPLES
from planner.report import figdata, fmt
from planner.report.data import (
    ReportData,
    as_dict,
    as_list,
    best_throughput,
    latency,
    sequence_sweep,
    text,
)
from planner.report.fmt import real
from planner.report.pipeline_lines import pipeline_lines
from planner.results import energy_view

TOP_LAYERS = 10
"""How many layers the time table lists; the rest are summed into one line."""


def percentile_cell(lat: Mapping[str, Any], name: str) -> str:
    """A tail percentile, or why it is not stated (too few samples for it)."""
    value = lat.get(f"{name}_ms")
    if value is not None:
        return fmt.ms(value)
    need = PERCENTILE_MIN_SAMPLES.get(name)
    if need is None:
        return fmt.NOT_MEASURED
    have = lat.get("samples")
    return (f"not measured — needs ≥{need} samples"
            + (f" (this run: {fmt.number(have)})" if have is not None else ""))


def latency_rows(lat: Mapping[str, Any]) -> list[list[str]]:
    """The latency statistics table's rows."""
    rows = [["p50", fmt.ms(lat.get("p50_ms"))]]
    rows += [[q, percentile_cell(lat, q)] for q in ("p90", "p95", "p99")]
    mean, std = lat.get("mean_ms"), lat.get("std_ms")
    rows.append(["mean ± std", f"{fmt.ms(mean)} ± {fmt.ms(std)}"])
    rows.append(["min / max", f"{fmt.ms(lat.get('min_ms'))} / {fmt.ms(lat.get('max_ms'))}"])
    iqr_rel = lat.get("iqr_over_median")
    rows.append(["spread (IQR: the middle half of the samples)",
                 f"{fmt.ms(lat.get('iqr_ms'))} ({fmt.pct(iqr_rel)} of the median)"])
    ci = real(lat.get("ci95_rel"))
    ci_text = (fmt.NOT_MEASURED if ci is None else
               "not bounded (too few samples for the interval)" if ci == float("inf")
               else f"±{fmt.pct(ci)} of the median")
    rows.append(["CI95 half-width of the median", ci_text])
    rows.append(["samples", fmt.number(lat.get("samples"))])
    unstable = lat.get("unstable")
    rows.append(["stable", "not measured" if unstable is None else
                 f"**no — unstable** (IQR/median {fmt.pct(iqr_rel)}): close other programs and re-run"
                 if unstable else "yes"])
    return rows


def throughput_lines(entry: dict, *, empty: str) -> list[str]:
    """The throughput-against-batch table of one candidate or the baseline."""
    points = [as_dict(p) for p in as_list(entry.get("throughput"))]
    if not points:
        return [empty]
    knee = entry.get("knee_batch")
    rows = [[fmt.number(p.get("batch")), fmt.ms(p.get("latency_p50_ms")), fmt.rate(p.get("samples_per_s")),
             fmt.size(p.get("peak_memory_bytes")), "knee" if knee is not None and p.get("batch") == knee else ""]
            for p in points]
    lines = fmt.table(["Batch", "p50 per batch", "Throughput", "Peak memory", ""], rows)
    best = best_throughput(entry)
    if best:
        lines += ["", f"Best {fmt.rate(best.samples_per_s)} at batch {fmt.number(best.batch)}"
                  + (f"; the knee is at batch {fmt.number(knee)}: larger batches add little throughput "
                     "for their extra latency" if knee is not None else
                     "; no knee: throughput was still growing at the largest batch swept") + "."]
    stopped = as_dict(entry.get("info")).get("sweep_stopped")
    if stopped:
        lines.append(f"The sweep stopped because: {stopped}.")
    return lines


def sweep_skipped(entry: Mapping[str, Any]) -> str:
    """Why no batch sweep was run ('' when one was, or the file does not say), without the engine's lead-in."""
    reason = text(as_dict(entry.get("info")).get("sweep_skipped")).strip()
    # The engine words it "no batch sweep: <why>"; the report says "skipped" itself.
    return reason.removeprefix("no batch sweep:").strip()


def skipped_sweep_lines(entry: dict, reason: str) -> list[str]:
    """What stands in for the batch table when the sweep was skipped: why, and the one batch measured."""
    lines = [f"The batch sweep was skipped: {reason}."]
    points = [as_dict(p) for p in as_list(entry.get("throughput"))]
    if len(points) == 1:
        point = points[0]
        lines.append(f"Throughput was measured at batch {fmt.number(point.get('batch'))} only: "
                     f"{fmt.rate(point.get('samples_per_s'))} (p50 {fmt.ms(point.get('latency_p50_ms'))} per call).")
    return lines


def sequence_lines(entry: dict) -> list[str]:
    """The latency-against-sequence-length table of a text model ([] for a model without a sequence axis)."""
    points = sequence_sweep(entry)
    stopped = text(as_dict(entry.get("info")).get("sequence_sweep_stopped"))
    if not points and not stopped:
        return []
    lines = ["### Latency against sequence length", ""]
    if points:
        lines += ["The same batch at shorter sequence lengths (every input's sequence axis shortened together); "
                  "tokens per second counts every position of every row.", ""]
        lines += fmt.table(["Sequence length", "p50", "Throughput"],
                           [[fmt.number(p.length), fmt.ms(p.latency_p50_ms), fmt.tokens_rate(p.tokens_per_s)]
                            for p in points])
        lines.append("")
    else:
        lines += ["No sequence length could be measured.", ""]
    if stopped:
        lines += [f"The sequence sweep stopped because: {stopped}.", ""]
    return lines


def input_lines(data: ReportData, lead: str) -> list[str]:
    """`lead` (the runtime sentence) followed by the inputs: inline for one, a list for several."""
    inputs = data.inputs
    if not inputs:
        return [lead + ", inputs not recorded."]
    if len(inputs) == 1:
        return [f"{lead}, input {fmt.tensor(inputs[0])}."]
    return [f"{lead}, with {len(inputs)} inputs:", ""] + [f"- {fmt.tensor(i)}" for i in inputs] + [""]


def _memory_lines(data: ReportData) -> list[str]:
    b, m = data.baseline, data.model
    lines = ["### Memory", ""]
    basis = text(b.get("memory_basis")) or "basis not recorded"
    lines.append(f"- Peak: {fmt.size(b.get('peak_memory_bytes'))} ({basis})")
    params = f" ({fmt.number(m['parameters'])} parameters)" if m.get("parameters") is not None else ""
    lines.append(f"- Weights and buffers: {fmt.size(m.get('size_bytes'))}{params}")
    act = b.get("peak_activation_bytes")
    lines.append(f"- Largest activation: {fmt.size(act)}" if act is not None else
                 "- Largest activation: not measured (no per-layer analysis)")
    return lines + [""]


def _compute_lines(data: ReportData) -> list[str]:
    b = data.baseline
    fps = real(b.get("flops_per_sample"))
    lines = ["### Compute", ""]
    if fps is None:
        notes = "; ".join(text(n) for n in as_list(b.get("analysis_notes"))) or "no FLOP count recorded"
        return lines + [f"FLOPs per sample: not measured ({notes}).", ""]
    basis = text(b.get("flops_basis")) or "basis not recorded"
    lines.append(f"- FLOPs per sample: {fmt.flops(fps)} ({basis})")
    inputs = data.inputs
    batch = next((i.shape[0] for i in inputs if i.shape), None)  # a scalar input has no batch
    if data.base_p50 and batch is not None:
        attained = fps * batch / (data.base_p50 / 1e3)
        peak, precision = figdata.peak_fp32(data)
        share = f", {fmt.pct(attained / peak)} of the measured {precision} peak" if peak else ""
        if peak and attained > peak:
            # Above the peak is a ceiling measured while busy, not a share to print.
            share = f", above the measured {precision} peak of {fmt.flop_rate(peak)}: {EXCEEDED_WARNING}"
        lines.append(f"- Attained by one call at batch {batch}: {fmt.flop_rate(attained)} "
                     f"(FLOPs per sample × batch / p50){share}")
    return lines + [""]


def _layer_lines(data: ReportData) -> list[str]:
    b = data.baseline
    layers = [as_dict(x) for x in as_list(b.get("layers"))]
    lines = ["### Top layers by time", ""]
    if not layers:
        notes = "; ".join(text(n) for n in as_list(b.get("analysis_notes")))
        return lines + [f"Per-layer analysis: not measured ({notes or 'no layers recorded'}).", ""]
    timed = sorted((x for x in layers if real(x.get("time_ms")) is not None),
                   key=lambda x: x["time_ms"], reverse=True)
    method = text(b.get("layer_time_method"))
    if not timed:
        lines.append("Layer times were not measured; layers are listed in execution order by FLOPs.")
        timed = sorted(layers, key=lambda x: real(x.get("flops")) or 0.0, reverse=True)
    elif method:
        lines.append(f"Layer time measured by: {method}.")
    lines.append("")
    rows = []
    for x in timed[:TOP_LAYERS]:
        verdict = text(figdata.layer_verdict(data, x).get("bound"))
        rows.append([fmt.code(figdata.layer_key(x)), text(x.get("type")), fmt.ms(x.get("time_ms")),
                     fmt.pct(x.get("time_share")), fmt.flops(x.get("flops")),
                     fmt.ratio(x.get("intensity")), f"{verdict}-bound" if verdict else "no verdict"])
    lines += fmt.table(["Layer", "Type", "Time", "Share", "FLOPs", "Intensity (FLOP/B)", "Verdict"], rows)
    rest = timed[TOP_LAYERS:]
    shares = [real(x.get("time_share")) for x in rest]
    if rest and all(s is not None for s in shares):
        lines += ["", f"The other layers take {fmt.pct(sum(shares))} of the layer time together."]
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Baseline section."""
    b = data.baseline
    lines = ["## Baseline", ""]
    if not b:
        return lines + [f"Baseline: {data.missing('profiling the baseline')}.", ""]
    lead = f"Runtime **{text(b.get('runtime')) or 'not recorded'}**"
    if b.get("device"):
        lead += f" on `{b['device']}`"
    lines += input_lines(data, lead)
    if b.get("stopped_by"):
        lines.append(f"Sampling stopped by: {b['stopped_by']}.")
    lines += ["", "### Latency", ""]
    lat = latency(b)
    if lat:
        pool = pool_sentence(as_dict(b.get("info")).get("input_pool"))
        lines += [pool, ""] if pool else []
        lines += fmt.table(["Statistic", "Value"], latency_rows(lat))
        lines += ["", "E" + energy_view.energy_detail(b)[1:] + "."]
    else:
        lines.append(f"Latency: {data.missing('timing the baseline')}.")
    lines += [""] + figdata.figure_block(data, figdata.LATENCY) + [""]
    lines += ["### Throughput against batch size", ""]
    skipped = sweep_skipped(b)
    lines += (skipped_sweep_lines(b, skipped) if skipped else
              throughput_lines(b, empty="No batch sweep was recorded for the baseline."))
    lines += [""] + figdata.figure_block(data, figdata.THROUGHPUT) + [""]
    lines += sequence_lines(b)
    request = pipeline_lines(data)
    if request:
        lines += ["### Your request end to end", "", *request, ""]
    return lines + _memory_lines(data) + _compute_lines(data) + _layer_lines(data)
