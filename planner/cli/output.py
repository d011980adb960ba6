"""What the CLI prints: JSON, the baseline profile and the ranked candidate table."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from planner import units
from planner.results import Baseline, CandidateResult, PlanResults, Status, energy_view, fidelity_view, results_data
from planner.results.audit import MeasurementAudit, load_summary, reproducibility
from planner.results.rows import candidate_rows
from planner.results.view import (
    check_on_your_data,
    generated_pass_caution,
    model_inputs,
    not_established_why,
    unconfirmed_lead,
    unconfirmed_term,
)
from planner.units import tokens_rate

if TYPE_CHECKING:
    from planner.deploy.verify import PackageVerdict
    from planner.pipeline.outcome import PlanOutcome


def print_json(data: object) -> None:
    """Print an object as indented JSON on stdout."""
    print(json.dumps(data, indent=2, default=str))


def format_baseline(b: Baseline) -> str:
    """A readable profile in the shape of an overall performance profile: timing, memory, layers."""
    lat = b.latency_ms
    m = b.model
    lines = [f"Baseline profile: {m.source} ({units.count(m.parameters)} parameters, "
             f"{units.size(m.size_bytes)}), {b.runtime}", ""]
    inputs = model_inputs({"inputs": list(b.inputs), "input_shape": list(b.input_shape)})
    lines += [f"{'Inputs' if n == 0 else '':<12} {i.describe()}" for n, i in enumerate(inputs)]
    tails = {"p90": lat.p90_ms, "p95": lat.p95_ms, "p99": lat.p99_ms}
    shown = [f"{q} {units.ms(v)}" for q, v in tails.items() if v is not None and q != "p90"]
    missing = [q for q, v in tails.items() if v is None]
    lines.append(f"Latency      p50 {units.ms(lat.p50_ms)}" + (", " + ", ".join(shown) if shown else "")
                 + f"; mean {units.ms(lat.mean_ms)} ± {units.ms(lat.std_ms)}; {lat.samples} samples"
                 + (f" ({', '.join(missing)} need more samples)" if missing else ""))
    if b.invalid:
        lines.append(f"             INVALID: {b.invalid}")
    if lat.unstable:
        lines.append(f"             UNSTABLE: IQR/median {units.pct(lat.iqr_over_median)} > 10%; "
                     "close other programs and re-run")
    skipped = str(b.info.get("sweep_skipped") or "").removeprefix("no batch sweep:").strip()
    if skipped and b.throughput:
        point = b.throughput[0]
        lines.append(f"Throughput   {units.rate(point.samples_per_s)} at batch {point.batch}; "
                     f"batch sweep skipped: {skipped}")
    elif b.throughput:
        best = max(b.throughput, key=lambda p: p.samples_per_s)
        pts = ", ".join(f"b{p.batch} {units.rate(p.samples_per_s)}" for p in b.throughput)
        lines.append(f"Throughput   {pts}")
        lines.append(f"             best {units.rate(best.samples_per_s)} at batch {best.batch}"
                     + (f"; knee at batch {b.knee_batch}" if b.knee_batch else ""))
        if b.info.get("sweep_stopped"):
            lines.append(f"             batch sweep stopped: {b.info['sweep_stopped']}")
    if b.sequence_sweep:
        lines.append("Sequence     " + ", ".join(f"{p.length} tokens {units.ms(p.latency_p50_ms)}"
                                                 for p in b.sequence_sweep))
        fastest = max(b.sequence_sweep, key=lambda p: p.tokens_per_s)
        lines.append(f"             best {tokens_rate(fastest.tokens_per_s)} at {fastest.length} tokens")
    if b.info.get("sequence_sweep_stopped"):
        lines.append(f"             sequence sweep stopped: {b.info['sequence_sweep_stopped']}")
    if b.flops_per_sample:
        # One timed call processes the model's whole batch, so the work per call is per-sample FLOPs × batch.
        batch = b.input_shape[0] if b.input_shape else 1
        achieved = b.flops_per_sample * batch / (lat.p50_ms / 1e3)
        lines.append(f"Compute      {units.flops(b.flops_per_sample)} per sample (2 per multiply-add); "
                     f"{units.flop_rate(achieved)} achieved at batch {batch}")
    mem = b.peak_memory_bytes
    lines.append(f"Memory       peak {units.size(mem)} ({b.memory_basis}); weights {units.size(m.size_bytes)}"
                 if mem else "Memory       not measured")
    if b.peak_activation_bytes:
        lines[-1] += f"; largest activation {units.size(b.peak_activation_bytes)}"
    c = b.ceilings
    peak = (c.get("peak_flops") or {}).get("fp32")
    lines.append(f"Ceilings     fp32 {units.flop_rate(peak)}, {units.bandwidth(c.get('bandwidth_bytes_per_s'))} "
                 f"({c.get('source', '')})" if peak else f"Ceilings     {c.get('source', '')}")
    bn = b.bottleneck
    if bn is not None and bn.bound:
        lines.append(f"Bottleneck   {bn.bound}-bound: {bn.explanation}")
    lines.append("Environment  " + environment_line(b.audit))
    if b.threads:
        lines.append("Threads      " + ", ".join(f"{k}={v}" for k, v in b.threads.items() if v is not None))
    layers = sorted((x for x in b.layers if x.time_ms is not None), key=lambda x: x.time_ms or 0.0, reverse=True)[:5]
    if layers:
        lines += ["", "Top layers by time:"]
        for x in layers:
            found = b.layer_verdicts.get(x.key)
            verdict = (found.bound or "") if found is not None else ""
            lines.append(f"  {x.key:<18} {x.type:<18} {units.ms(x.time_ms):>10} "
                         f"{units.pct(x.time_share or 0):>6}  {units.flops(x.flops):>11}  "
                         f"AI {units.ratio(x.intensity):>6}  {verdict}")
    if b.findings:
        lines += ["", "Architecture findings (ranked by impact):"]
        for i, f in enumerate(b.findings[:8], 1):
            lines.append(f"  {i}. [{f.severity}] {f.title} — {units.pct(f.impact)} "
                         f"{f.impact_basis}; layers: {', '.join(f.layers[:5])}"
                         + (" …" if len(f.layers) > 5 else ""))
            lines.append(f"     {f.advice}")
    lines.append(f"\nMeasured in {units.seconds(b.wall_s)}; reproduce: {b.reproduce}")
    return "\n".join(lines)


def format_ranking(results: PlanResults) -> str:
    """The ranked candidate table, then rejected/failed ones with their reasons."""
    by = results.ranking.by if results.ranking else "p50 latency"
    # A dense map, a sequence or a regression output shows its own test's figure (map IoU...), not cosine.
    by_kind = any(c.fidelity is not None and c.fidelity.output_kind not in ("", "classes") for c in results.candidates)
    fid_head, fid_w = ("agreement", 18) if by_kind else ("cosine", 8)
    head = (f"{'#':>2} {'candidate':<44} {'p50 ms':>8} {'p95 ms':>8} {energy_view.SHORT_HEADER:>7} {'best/s':>8} "
            f"{'b×str':>5} "
            f"{'mem MiB':>7} {fid_head:>{fid_w}} {'speedup':>7} {'predicted':>10} status")
    lines = [f"Candidates ranked by {by} (status: {results.status})", head, "-" * len(head)]
    rows = candidate_rows(results)
    for row in rows:
        rank, c = row.rank, row.cand
        lat = c.latency_ms
        lines.append(
            f"{rank or '':>2} {c.label[:44]:<44} {units.ms(lat.p50_ms if lat else None, unit=False):>8} "
            f"{units.ms(lat.p95_ms if lat else None, unit=False):>8} {energy_view.short_cell(c):>7} {_rate_cells(c)} "
            f"{units.mib(c.peak_memory_bytes):>7} {_fidelity_cell(c, by_kind):>{fid_w}} "
            f"{units.speedup(row.speedup):>7} {_band(c):>10} {c.status}")
    cands = [row.cand for row in rows]
    lines += _streams_note(cands)
    lines += [f"\n{energy_view.SHORT_HEADER}: " + energy_view.energy_note(results).removeprefix(
        f"{energy_view.HEADER}: ") + " (marks: n/a unavailable, <res below the counter's resolution, inval invalid, "
        "n/cov the counter does not see the candidate's device, n/rec not recorded)"]
    problems = [c for c in cands
                if c.status in (Status.REJECTED, Status.UNCONFIRMED, Status.FAILED, Status.SKIPPED)]
    if problems:
        # The report's words for a reason ("fidelity check: ..., below the 0.995 needed"); imported here
        # because the report package is slow to import and most commands never print this.
        from planner.report.fmt import plain_reason

        lines += ["", "Not ranked:"]
        # One line per distinct reason: many settings of one runtime often share it word for word.
        groups: dict[tuple[str, str], list[str]] = {}
        for c in problems:
            groups.setdefault((str(c.status), plain_reason(c.reason)), []).append(c.label)
        lines += [f"  {'; '.join(names)}: {status}: {reason}" for (status, reason), names in groups.items()]
    for s in results.skipped_plugins:
        lines.append(f"  plugin {s.plugin} skipped: {'; '.join(s.reasons)}")
    if any(c.latency_ms is not None and c.latency_ms.p95_ms is None for c in cands):
        lines.append("\n— p95 needs at least 128 samples; a slow model or a quick run gives fewer "
                     "within the time cap.")
    confirmed = [c for c in cands if c.confirmation is not None]
    if confirmed:
        held = sum(c.confirmation.reproduced for c in confirmed if c.confirmation is not None)
        turns = " (timed in turns, so a change in load fell on them alike)" if any(
            c.confirmation is not None and c.confirmation.interleaved > 1 for c in confirmed) else ""
        lines.append(f"\nLeaders confirmed with the full method{turns}: {held} of {len(confirmed)} reproduced the "
                     "2-second screen within 10%; the table shows the full figures.")
        lines += [f"  {c.label}: {c.confirmation.note}" for c in confirmed
                  if c.confirmation is not None and c.confirmation.note]
    measured = [(c.label, c.audit, c.latency_ms) for c in cands if c.measured]
    disturbed = [c for c in cands if c.measured and c.audit is not None and c.audit.disturbed]
    if disturbed and disturbed[0].audit is not None:
        lines.append(f"\n! Measured under interference ({len(disturbed)} of {len(measured)}): "
                     f"{disturbed[0].audit.issues[0]}")
    statement = reproducibility(measured).statement
    if statement:
        lines.append(f"\n{statement}")
    if results.predictions_held:
        lines.append(f"\nPredictions (speedup bands set before measuring): {results.predictions_held}")
    return "\n".join(lines + best_lines(results))


def best_lines(results: PlanResults) -> list[str]:
    """The closing lines: the best candidate and how to reproduce it; with a faster candidate not established on
    real data, the best is called confirmed and the faster one is named with how to check it on real data."""
    best = results.best
    lead = unconfirmed_lead(results.candidates, best.speedup if best is not None else None)
    lines = []
    if best is not None:
        name = "Best confirmed" if lead is not None else "Best"
        lines += ["", f"{name}: {best.label} at {units.speedup(best.speedup)} — reproduce with:", f"  {best.reproduce}"]
        caution = generated_pass_caution(best)
        if caution:
            lines.append(f"Note: {caution[0].upper()}{caution[1:]}.")
        if results.energy_source is not None:
            lines.append(f"Energy: {energy_view.energy_detail(best).removeprefix('energy: ')}")
    if lead is not None:
        lines += ([""] if best is None else []) + [
            check_on_your_data(lead) + f" ({unconfirmed_term(lead)}: {not_established_why(lead)})"]
    return lines


def _fidelity_cell(c: CandidateResult, by_kind: bool) -> str:
    """Cosine for class scores; the kind's own agreement ('map IoU 0.98', 'positions 99.6%') otherwise."""
    if not by_kind or c.fidelity is None:
        return units.cosine(c.fidelity.cosine if c.fidelity else None)
    return "reference" if c.fidelity.reference else fidelity_view.agreement_cell(c.fidelity)


def environment_line(audit: MeasurementAudit | None) -> str:
    """The audit in one line: what disturbed the measurement and what to do, or that nothing did."""
    if audit is None:
        return "not audited (results from an older planner)"
    if audit.disturbed:
        return "TAKEN UNDER INTERFERENCE: " + "; ".join(audit.issues)
    return f"no interference seen ({load_summary(audit)})"


def _rate_cells(c: CandidateResult) -> str:
    """'best/s' and 'b×str': the most samples/s over batch and streams, and the batch × streams it needs."""
    peak = c.peak_rate()
    at = f"{peak.batch}×{peak.streams}" if peak is not None else units.MISSING
    return f"{units.rate(peak.samples_per_s if peak else None, unit=False):>8} {at:>5}"


def _streams_note(cands: list[CandidateResult]) -> list[str]:
    """What 'b×str' means, and how each runtime ran its streams, when any candidate was measured with several."""
    bases = dict.fromkeys(p.basis for c in cands for p in c.streams if p.streams > 1 and p.basis)
    if not bases:
        return []
    return (["", "best/s is the most samples/s over the batch sweep and parallel streams; b×str is the batch "
                 "and how many requests were in flight at once (streams) to reach it. Streams ran as:"]
            + [f"  {basis}" for basis in bases])


def _band(c: CandidateResult) -> str:
    """The predicted speedup band, or a dash for the baseline and unpredicted rows."""
    band = c.prediction.band() if c.prediction is not None else ""
    return band or units.MISSING


def format_verdict(verdict: "PackageVerdict") -> str:
    """One package's checks: a heading, then each check passed or failed with what it found."""
    lines = [f"{verdict.folder}  {verdict.label} ({verdict.runtime}): {'PASS' if verdict.passed else 'FAIL'}"]
    for check in verdict.checks:
        lines.append(f"  {check.name:<9} {'pass' if check.passed else 'FAIL'}  {check.detail}")
    names = {c.name for c in verdict.checks}
    for skipped in ("fidelity", "latency"):
        if skipped not in names:
            lines.append(f"  {skipped:<9} not run: the checks above failed")
    return "\n".join(lines)


def request_split_lines(results: PlanResults) -> list[str]:
    """The user's requests end to end (`--pipeline`), with the original model and the winner; [] without it."""
    from planner.results.pipeline_split import split_lines

    baseline = results.baseline.pipeline if results.baseline is not None else None
    index = results.ranking.best if results.ranking else None
    best = results.candidates[index] if index else None  # index 0 is the original model itself
    winner = best.pipeline if best is not None else None
    lines = split_lines(baseline, winner, winner_label=best.label if best is not None else "")
    return ["", *lines] if lines else []


def print_outcome(outcome: PlanOutcome, *, json_out: bool = False) -> int:
    """How a plan ended, wherever it ran, printed one way: the ranking (results.json's object with --json), the
    requests' split, what went wrong and what was not brought here (on stderr), where the folder and the report
    are. Returns the exit status: 0 when it gave results that did not fail."""
    results = outcome.results
    if json_out and results is not None:
        print_json(results_data(results))  # the object results.json holds
    elif results is not None:
        print(format_ranking(results))
        for line in request_split_lines(results):
            print(line)
    if outcome.failure:
        print(f"{outcome.name or 'error'}: {outcome.failure}", file=sys.stderr)
    for name, why in sorted(outcome.skipped.items()):
        print(f"not fetched: {name} ({why})", file=sys.stderr)
    if not json_out and outcome.where:
        print(f"\n{outcome.where}")
        if outcome.report_path is not None:
            print(f"Report {outcome.report_path}")
    return 0 if outcome.succeeded else 1
