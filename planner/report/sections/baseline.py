"""Baseline: the latency distribution, throughput against batch, memory, FLOPs and top layers."""

from __future__ import annotations

import math

from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.measure.pool import pool_sentence
from planner.measure.stats import PERCENTILE_MIN_SAMPLES
from planner.report import figdata, fmt
from planner.report.data import ReportData
from planner.report.pipeline_lines import pipeline_lines
from planner.results import Baseline, CandidateResult, energy_view, names
from planner.results.values import LatencyStats
from planner.results.view import best_point

TOP_LAYERS = 10
"""How many layers the time table lists; the rest are summed into one line."""

Measured = Baseline | CandidateResult
"""What was timed: the baseline profile or a candidate (both carry a batch sweep, a sequence sweep and notes)."""


def _note(entry: Measured, key: str) -> str:
    """One note the runtime recorded in the entry's `info` (a plain JSON object), '' when it recorded none."""
    value = entry.info.get(key)
    return "" if value is None else str(value)


def percentile_cell(lat: LatencyStats, name: str, value: float | None) -> str:
    """A tail percentile's cell (`value`, the percentile `name` of `lat`), or why it is not stated (too few
    samples for it)."""
    if value is not None:
        return fmt.ms(value)
    need = PERCENTILE_MIN_SAMPLES.get(name)
    if need is None:
        return fmt.NOT_MEASURED
    return f"not measured — needs ≥{need} samples (this run: {fmt.number(lat.samples)})"


def latency_rows(lat: LatencyStats) -> list[list[str]]:
    """The latency statistics table's rows."""
    rows = [["p50", fmt.ms(lat.p50_ms)]]
    rows += [[q, percentile_cell(lat, q, v)] for q, v in (("p90", lat.p90_ms), ("p95", lat.p95_ms),
                                                          ("p99", lat.p99_ms))]
    rows.append(["mean ± std", f"{fmt.ms(lat.mean_ms)} ± {fmt.ms(lat.std_ms)}"])
    rows.append(["min / max", f"{fmt.ms(lat.min_ms)} / {fmt.ms(lat.max_ms)}"])
    rows.append(["spread (IQR: the middle half of the samples)",
                 f"{fmt.ms(lat.iqr_ms)} ({fmt.pct(lat.iqr_over_median)} of the median)"])
    ci = lat.ci95_rel
    ci_text = (fmt.NOT_MEASURED if math.isnan(ci) else
               "not bounded (too few samples for the interval)" if ci == float("inf")
               else f"±{fmt.pct(ci)} of the median")
    rows.append(["CI95 half-width of the median", ci_text])
    rows.append(["samples", fmt.number(lat.samples)])
    rows.append(["stable", f"**no — unstable** (IQR/median {fmt.pct(lat.iqr_over_median)}): close other programs "
                 "and re-run" if lat.unstable else "yes"])
    return rows


def throughput_lines(entry: Measured, *, empty: str) -> list[str]:
    """The throughput-against-batch table of one candidate or the baseline."""
    if not entry.throughput:
        return [empty]
    knee = entry.knee_batch
    rows = [[fmt.number(p.batch), fmt.ms(p.latency_p50_ms), fmt.rate(p.samples_per_s),
             fmt.size(p.peak_memory_bytes), "knee" if knee is not None and p.batch == knee else ""]
            for p in entry.throughput]
    # The worker's memory as each batch finished (its RSS then), not the whole job's peak, which the Memory part gives.
    lines = fmt.table(["Batch", "p50 per batch", "Throughput", "Memory after it (RSS)", ""], rows)
    # A point with no rate, or a figure that is not finite, measured nothing to rank by.
    best = best_point(tuple(p for p in entry.throughput if p.samples_per_s > 0 and math.isfinite(p.samples_per_s)
                            and math.isfinite(p.latency_p50_ms)))
    if best:
        lines += ["", f"Best {fmt.rate(best.samples_per_s)} at batch {fmt.number(best.batch)}"
                  + (f"; the knee is at batch {fmt.number(knee)}: larger batches add little throughput "
                     "for their extra latency" if knee is not None else
                     "; no knee: throughput was still growing at the largest batch swept") + "."]
    stopped = _note(entry, "sweep_stopped")
    if stopped:
        lines.append(f"The sweep stopped because: {stopped}.")
    return lines


def sweep_skipped(entry: Measured) -> str:
    """Why no batch sweep was run ('' when one was, or the file does not say), without the engine's lead-in."""
    # The engine words it "no batch sweep: <why>"; the report says "skipped" itself.
    return _note(entry, "sweep_skipped").strip().removeprefix("no batch sweep:").strip()


def skipped_sweep_lines(entry: Measured, reason: str) -> list[str]:
    """What stands in for the batch table when the sweep was skipped: why, and the one batch measured."""
    lines = [f"The batch sweep was skipped: {reason}."]
    if len(entry.throughput) == 1:
        point = entry.throughput[0]
        lines.append(f"Throughput was measured at batch {fmt.number(point.batch)} only: "
                     f"{fmt.rate(point.samples_per_s)} (p50 {fmt.ms(point.latency_p50_ms)} per call).")
    return lines


def sequence_lines(entry: Measured) -> list[str]:
    """The latency-against-sequence-length table of a text model ([] for a model without a sequence axis)."""
    points = sorted(entry.sequence_sweep, key=lambda p: p.length)
    stopped = _note(entry, "sequence_sweep_stopped")
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
    inputs = data.model_inputs
    if not inputs:
        return [lead + ", inputs not recorded."]
    if len(inputs) == 1:
        return [f"{lead}, input {fmt.tensor(inputs[0])}."]
    return [f"{lead}, with {len(inputs)} inputs:", ""] + [f"- {fmt.tensor(i)}" for i in inputs] + [""]


def _memory_lines(data: ReportData, b: Baseline) -> list[str]:
    m = data.model_record or b.model
    lines = ["### Memory", ""]
    lines.append(f"- Peak: {fmt.size(b.peak_memory_bytes)} ({b.memory_basis or 'basis not recorded'})")
    params = f" ({fmt.number(m.parameters)} parameters)" if m.parameters is not None else ""
    lines.append(f"- Weights and buffers: {fmt.size(m.size_bytes)}{params}")
    act = b.peak_activation_bytes
    lines.append(f"- Largest activation: {fmt.size(act)}" if act is not None else
                 "- Largest activation: not measured (no per-layer analysis)")
    return lines + [""]


def _compute_lines(data: ReportData, b: Baseline) -> list[str]:
    lines = ["### Compute", ""]
    if b.flops_per_sample is None:
        notes = "; ".join(b.analysis_notes) or "no FLOP count recorded"
        return lines + [f"FLOPs per sample: not measured ({notes}).", ""]
    fps = float(b.flops_per_sample)
    lines.append(f"- FLOPs per sample: {fmt.flops(fps)} ({b.flops_basis or 'basis not recorded'})")
    inputs = data.model_inputs
    batch = next((i.shape[0] for i in inputs if i.shape), None)  # a scalar input has no batch
    if data.base_ms and batch is not None:
        attained = fps * batch / (data.base_ms / 1e3)
        peak, precision = figdata.peak_fp32(data)
        share = f", {fmt.pct(attained / peak)} of the measured {precision} peak" if peak else ""
        if peak and attained > peak:
            # Above the peak is a ceiling measured while busy, not a share to print.
            share = f", above the measured {precision} peak of {fmt.flop_rate(peak)}: {EXCEEDED_WARNING}"
        lines.append(f"- Attained by one call at batch {batch}: {fmt.flop_rate(attained)} "
                     f"(FLOPs per sample × batch / p50){share}")
    return lines + [""]


def _layer_lines(data: ReportData, b: Baseline) -> list[str]:
    lines = ["### Top layers by time", ""]
    if not b.layers:
        notes = "; ".join(b.analysis_notes)
        return lines + [f"Per-layer analysis: not measured ({notes or 'no layers recorded'}).", ""]
    timed = sorted((x for x in b.layers if x.time_ms is not None), key=lambda x: x.time_ms or 0.0, reverse=True)
    if not timed:
        lines.append("Layer times were not measured; layers are listed in execution order by FLOPs.")
        timed = sorted(b.layers, key=lambda x: x.flops, reverse=True)
    elif b.layer_time_method:
        lines.append(f"Layer time measured by: {b.layer_time_method}.")
    lines.append("")
    rows = []
    for x in timed[:TOP_LAYERS]:
        verdict = figdata.layer_bound(data, x)
        rows.append([fmt.code(figdata.layer_key(x)), x.type, fmt.ms(x.time_ms), fmt.pct(x.time_share),
                     fmt.flops(x.flops), fmt.ratio(x.intensity), f"{verdict}-bound" if verdict else "no verdict"])
    lines += fmt.table(["Layer", "Type", "Time", "Share", "FLOPs", "Intensity (FLOP/B)", "Verdict"], rows)
    rest = timed[TOP_LAYERS:]
    shares = [x.time_share for x in rest if x.time_share is not None]
    if rest and len(shares) == len(rest):
        lines += ["", f"The other layers take {fmt.pct(sum(shares))} of the layer time together."]
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Baseline section."""
    b = data.run.baseline
    lines = ["## Baseline", ""]
    if b is None:
        return lines + [f"Baseline: {data.missing('profiling the baseline')}.", ""]
    lead = f"Runtime **{names.baseline_title(b) if b.declared is not None or b.runtime else 'not recorded'}**"
    if b.device:
        lead += f" on `{b.device}`"
    lines += input_lines(data, lead)
    if b.stopped_by:
        lines.append(f"Sampling stopped by: {b.stopped_by}.")
    lines += ["", "### Latency", ""]
    # A baseline always has its latency (the record requires it); a run stopped before timing it has no baseline.
    pool = pool_sentence(b.info.get("input_pool"))
    lines += [pool, ""] if pool else []
    lines += fmt.table(["Statistic", "Value"], latency_rows(b.latency_ms))
    lines += ["", "E" + energy_view.energy_detail(b)[1:] + "."]
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
    return lines + _memory_lines(data, b) + _compute_lines(data, b) + _layer_lines(data, b)
