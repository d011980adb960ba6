"""All candidates: every configuration measured, its numbers and status; rejections, failures, skips."""

from __future__ import annotations

from planner import units
from planner.report import figdata, fmt
from planner.report.data import (
    ReportData,
    as_dict,
    as_list,
    latency,
    p50,
    sequence_sweep,
    text,
)
from planner.report.sections.baseline import PERCENTILE_MIN_SAMPLES, sweep_skipped
from planner.report.sections.validation import validation_lines
from planner.results import energy_view, fidelity_view, roof_share
from planner.results.values import OutputKind
from planner.results.view import peak_rate, stream_points

_NOT_RANKED = ("rejected", "unconfirmed", "failed", "skipped")
# Why a sweep stopped or was skipped is said in words, not listed among the settings in force.
_SWEEP_NOTES = ("sweep_stopped", "sweep_skipped", "sequence_sweep_stopped", "streams_skipped")


def label(cand: dict) -> str:
    """A candidate's display name."""
    return text(cand.get("label")) or text(cand.get("plugin")) or "unnamed candidate"


def ordered(data: ReportData) -> list[dict]:
    """Ranked candidates by rank, then the rest in the order they were measured."""
    cands = data.candidates
    ranked = sorted((c for c in cands if data.rank(c) is not None), key=lambda c: data.rank(c) or 0)
    return ranked + [c for c in cands if data.rank(c) is None]


def p95_cell(cand: dict) -> str:
    """p95 latency, or the sample count it needs."""
    lat = latency(cand)
    if lat.get("p95_ms") is not None:
        return fmt.ms(lat["p95_ms"])
    if not lat:
        return fmt.NOT_MEASURED
    return f"needs ≥{PERCENTILE_MIN_SAMPLES['p95']} samples"


def fidelity_headers(cands: list[dict]) -> tuple[str, str]:
    """The fidelity columns' titles: ("Cosine", "Top-1") where every output is class scores, else ("Error",
    "Agreement"), whose cells name their own test (a dense map has no top-1, and its cosine is no test)."""
    if all(fidelity_view.kind(c.get("fidelity")) == OutputKind.CLASSES for c in cands):
        return "Cosine", "Top-1"
    return "Error", "Agreement"


def fidelity_cells(cand: dict, *, by_kind: bool = False) -> tuple[str, str]:
    """(cosine, top-1) as table cells; the reference is marked as such.

    `by_kind` (the "Error" and "Agreement" columns): each cell names its test, in the output kind's own
    terms ('6.1e-08 (0-1 scale)', 'map IoU 0.98'; 'cosine 0.99999', 'top-1 100%' for class scores).
    """
    fid = as_dict(cand.get("fidelity"))
    if fid.get("reference") is True:
        return "reference", "reference"
    if not fid:
        return fmt.NOT_MEASURED, fmt.NOT_MEASURED
    if by_kind:
        return fidelity_view.error_cell(fid), fidelity_view.agreement_cell(fid)
    top1 = fid.get("top1_agreement")
    if top1 is not None:
        top1_cell = fmt.pct(top1)
    elif fid.get("top1_samples") == 0:
        top1_cell = "no test (margins within error)"
    else:
        top1_cell = "n/a (output is not class scores)"
    return fmt.cosine(fid.get("cosine")), top1_cell


def has_accuracy(cands: list[dict]) -> bool:
    """Whether any candidate was measured against labels (then the table shows an accuracy column)."""
    return any(as_dict(c.get("fidelity")).get("accuracy") is not None for c in cands)


def accuracy_cell(cand: dict) -> str:
    """Accuracy on the labelled validation data, or why there is none."""
    fid = as_dict(cand.get("fidelity"))
    if not fid:
        return fmt.NOT_MEASURED
    return fmt.accuracy(fid.get("accuracy")) if fid.get("accuracy") is not None else fmt.NOT_MEASURED


def gate_lines(cands: list[dict]) -> list[str]:
    """Which fidelity test passed or rejected each candidate ([] when none recorded one)."""
    decided = [(c, text(as_dict(c.get("fidelity")).get("decided_by"))) for c in cands]
    decided = [(c, d) for c, d in decided if d]
    if not decided:
        return []
    return (["### Fidelity check: the test that decided", ""]
            + [f"- **{label(c)}** ({text(c.get('status')) or 'unknown'}): {fmt.plain_reason(d)}" for c, d in decided]
            + [""])


def generated_inputs_lines(cands: list[dict]) -> list[str]:
    """What a fidelity check on generated inputs can say, when this run's checks ran on them ([] otherwise)."""
    generated = any("generated inputs" in text(as_dict(c.get("fidelity")).get("decided_by")) for c in cands)
    unjudged = [c for c in cands if text(c.get("status")) == "unconfirmed"
                and text(as_dict(c.get("fidelity")).get("cannot_judge"))]
    unconfirmed = [label(c) for c in cands if text(c.get("status")) == "unconfirmed" and c not in unjudged]
    if not generated and not unconfirmed and not unjudged:
        return []
    lines = [""] + (["The fidelity checks ran on generated inputs (no validation data was given): a pass says the "
                     "outputs agree with the original's on those inputs, not that accuracy holds on real data."]
                    if generated else [])
    if unjudged:
        why = text(as_dict(unjudged[0].get("fidelity")).get("cannot_judge"))
        settle = ("`--val-data DIR` with real inputs (labelled, so accuracy decides), or the model's trained weights"
                  if generated else "the model's trained weights, or labelled `--val-data DIR` (accuracy then decides)")
        lines.append(f"*Cannot judge* ({fmt.series([label(c) for c in unjudged])}): not established on real data. "
                     f"The check compares each candidate with the original on the part of the outputs that depends "
                     f"on the input, and here {why}. Nothing on these inputs could fail a candidate that changes the "
                     f"arithmetic, so none is called passed; what would settle it: {settle}.")
    if unconfirmed:
        lines.append(f"*Unconfirmed* ({fmt.series(unconfirmed)}): not established on real data. The outputs "
                     "drifted from the original's on generated inputs, which cannot tell whether that matters on "
                     "real data. A candidate that changes the arithmetic (lower precision or an approximation) "
                     "and drifts there is not ranked until `--val-data DIR` checks it on your data.")
    return lines


def dropped_note(cand: dict) -> str:
    """Why the budgeted search gave a candidate no more time than the quick screen ('' when it did not): its
    row's figures are the screen's."""
    why = text(cand.get("dropped"))
    return f"screen figures only: {why}" if why else ""


def _row(data: ReportData, cand: dict, *, with_accuracy: bool = False, by_kind: bool = False,
         with_note: bool = False) -> list[str]:
    best = peak_rate(cand)
    cos, top1 = fidelity_cells(cand, by_kind=by_kind)
    size = cand.get("size_bytes")
    if size is None and data.is_reference(cand):
        size = data.model.get("size_bytes")
    status = text(cand.get("status")) or "unknown"
    accuracy = [accuracy_cell(cand)] if with_accuracy else []
    return [fmt.number(data.rank(cand)) if data.rank(cand) is not None else "—",
            f"**{label(cand)}**" if cand is data.best else label(cand),
            text(cand.get("precision")) or "—",
            fmt.ms(p50(cand)), p95_cell(cand), energy_view.energy_cell(cand),
            f"{fmt.rate(best.samples_per_s)} @ batch {fmt.number(best.batch)}"
            + (f" × {fmt.number(best.streams)} streams" if best.streams > 1 else "") if best
            else fmt.NOT_MEASURED,
            fmt.size(cand.get("peak_memory_bytes")), fmt.size(size), cos, top1, *accuracy,
            fmt.speedup(data.speedup(cand)) if p50(cand) is not None else "—", status,
            *([dropped_note(cand)] if with_note else [])]


def shared_sweep_skip(data: ReportData) -> str:
    """The one reason every measured candidate's batch sweep was skipped for, or '' when they differ."""
    reasons = {sweep_skipped(c) for c in data.candidates if latency(c)}
    return reasons.pop() if len(reasons) == 1 else ""


def _settings(data: ReportData, cand: dict) -> str:
    parts = [f"- **{label(cand)}** (`{text(cand.get('plugin')) or 'plugin not recorded'}`)"]
    config = cand.get("config")
    if config:
        parts.append(f"config `{fmt.compact(config)}`")
    info = {k: v for k, v in as_dict(cand.get("info")).items() if k not in _SWEEP_NOTES}
    if info:
        parts.append("in force: " + "; ".join(f"{k} {fmt.number(v)}" for k, v in info.items()))
    skipped = sweep_skipped(cand)
    if skipped and skipped != shared_sweep_skip(data):
        parts.append(f"batch sweep skipped: {skipped}")
    threads = {k: v for k, v in as_dict(cand.get("threads")).items() if v not in (None, [], "")}
    if threads:
        parts.append("threads: " + "; ".join(f"{k} {fmt.number(v)}" for k, v in threads.items()))
    if cand.get("memory_basis"):
        parts.append(f"memory basis: {cand['memory_basis']}")
    return parts[0] + (": " + ", ".join(parts[1:]) if len(parts) > 1 else "")


def sequence_table(cands: list[dict]) -> list[str]:
    """p50 by sequence length, one row per candidate with a sequence sweep ([] unless two have one)."""

    def stopped(cand: dict) -> str:
        return text(as_dict(cand.get("info")).get("sequence_sweep_stopped"))

    swept = [(c, {p.length: p for p in sequence_sweep(c)}) for c in cands]
    swept = [(c, points) for c, points in swept if points or stopped(c)]
    # Only the baseline sweeps sequence lengths today; its table is in the baseline section already.
    if len(swept) < 2:
        return []
    lengths = sorted({n for _, points in swept for n in points})
    rows = [[label(c)] + [fmt.ms(points[n].latency_p50_ms) if n in points else fmt.NOT_MEASURED for n in lengths]
            for c, points in swept]
    lines = ["### p50 latency by sequence length", ""]
    if lengths:
        lines += fmt.table(["Candidate"] + [f"{fmt.number(n)} tokens" for n in lengths], rows) + [""]
    lines += [f"- {label(c)}: the sequence sweep stopped because {stopped(c)}" for c, _ in swept if stopped(c)]
    return lines + [""]


def confirmation_lines(cands: list[dict]) -> list[str]:
    """How the quick screen's leaders fared when measured again with the full method: the table shows the full
    figure, the one the ranking used, and only a leader whose two figures disagree is named."""
    confirmed = [c for c in cands if isinstance(c.get("confirmation"), dict)]
    if not confirmed:
        return []
    held = sum(bool(c["confirmation"].get("reproduced")) for c in confirmed)
    turns = any((units.whole(c["confirmation"].get("interleaved")) or 0) > 1 for c in confirmed)
    lines = ["", f"The quick screen times each candidate for about 2 seconds; its {len(confirmed)} leaders were "
             "measured again with the full method before ranking" + (", in turns" if turns else "")
             + ". The table, the ranking and the Roadmap use those full figures, not the screen's; "
             f"{held} of {len(confirmed)} agreed with the screen within 10%."]
    for c in confirmed:
        conf = c["confirmation"]
        change = fmt.real(conf.get("rel_change"))
        if conf.get("reproduced") or change is None:
            continue
        note = text(conf.get("note"))
        direction = "slower" if change > 0 else "faster"
        lines.append(f"- **{label(c)}**: the full method measured it {fmt.pct(abs(change))} {direction} than the "
                     "screen" + (f" — {note}" if note else ""))
    return lines


def streams_lines(cands: list[dict]) -> list[str]:
    """Rows/s one request at a time against the runtime's parallel streams, at each candidate's best batch."""
    measured = [(c, stream_points(c)) for c in cands]
    measured = [(c, points) for c, points in measured if any(p.streams > 1 for p in points)]
    skipped = [(c, text(as_dict(c.get("info")).get("streams_skipped"))) for c in cands]
    skipped = [(c, why) for c, why in skipped if why]
    if not measured:
        return []
    lines = ["", "Parallel streams: a server keeps several requests in flight at once (streams), which a "
             "one-request-at-a-time batch sweep cannot show. Each candidate whose runtime can was run for about "
             "a second at its best batch, first as configured, then with the runtime's own stream count. Rates "
             "follow the batch sweep's rule (requests in flight times rows per call, over the median call time), "
             "so Best throughput above is the highest of these and the sweep; Sustained counts the rows that "
             "completed over the wall time, slow calls included, and falls below it on a busy machine.", ""]
    rows = []
    for c, points in measured:
        one = next((p for p in points if p.streams == 1), None)
        many = max((p for p in points if p.streams > 1), key=lambda p: p.samples_per_s)
        rows.append([label(c), fmt.number(many.batch), fmt.rate(one.samples_per_s) if one else fmt.NOT_MEASURED,
                     fmt.rate(many.samples_per_s), fmt.number(many.streams),
                     fmt.rate(many.sustained_per_s) if many.sustained_per_s else fmt.NOT_MEASURED, many.basis or "—"])
    lines += fmt.table(["Candidate", "Batch", "One request at a time", "With streams", "Streams",
                        "Sustained with streams", "How"], rows)
    lines += [f"- {label(c)}: no parallel streams: {why}" for c, why in skipped]
    return lines


def roof_lines(data: ReportData, cands: list[dict]) -> list[str]:
    """Each measured candidate's share of its own precision's roof (an INT8 candidate against the INT8 roof), in
    words under the table; [] when no candidate recorded one (files written before the share was)."""
    if not any(as_dict(c.get("roof_share")) for c in cands):
        return []
    omitted = as_dict(data.ceilings.get("details"))
    lines = ["", "Share of its own roof: the model's FLOPs per call (2 per multiply-add; int8 operations counted "
             "alike) over the candidate's p50, against the measured peak of the precision it computes in. A "
             "candidate that removes work (pruning, low rank, a new architecture) has none: the model's FLOPs "
             "would overstate what it does.", ""]
    for c in cands:
        share = roof_share.phrase(as_dict(c.get("roof_share")))
        precision = text(c.get("precision")).lower()
        if not share and p50(c) is not None and precision and precision not in as_dict(
                data.ceilings.get("peak_flops")):
            why = text(omitted.get(f"{precision}_omitted")) or "not measured on this machine"
            share = f"no {precision.upper()} roof ({why})"
        if share:
            lines.append(f"- **{label(c)}**: {share}")
    return lines


def render(data: ReportData) -> list[str]:
    """The All candidates section."""
    lines = ["## All candidates", ""]
    cands = ordered(data)
    if not cands:
        lines += [f"No candidates: {data.missing('measuring candidates')}.", ""]
        lines += figdata.figure_block(data, figdata.CANDIDATES) + [""]
    else:
        ranked_by = data.ranked_by
        lines += [("Ranked by " + ranked_by + "; " if ranked_by else "")
                  + "only candidates that pass the fidelity check are ranked (the fidelity check: "
                  + fmt.fidelity_rule(data.candidates) + "). Speedup is the baseline's p50 over the candidate's.",
                  ""]
        lines += validation_lines(data)
        # The accuracy column appears only with labelled validation data, so other reports keep their shape.
        with_accuracy = has_accuracy(cands)
        headers = fidelity_headers(cands)
        by_kind = headers != ("Cosine", "Top-1")
        # A note column only where the budgeted search stopped timing a candidate after the screen.
        with_note = any(dropped_note(c) for c in cands)
        lines += fmt.table(["Rank", "Candidate", "Precision", "p50", "p95", energy_view.HEADER, "Best throughput",
                            "Peak memory", "Size", *headers, *(["Accuracy"] if with_accuracy else []),
                            "Speedup", "Status", *(["Note"] if with_note else [])],
                           [_row(data, c, with_accuracy=with_accuracy, by_kind=by_kind, with_note=with_note)
                            for c in cands])
        lines += ["", energy_view.energy_note(data.results, cands)]
        lines += generated_inputs_lines(cands)
        shared = shared_sweep_skip(data)
        if shared:
            lines += ["", f"Best throughput is at one batch: no candidate's batch sweep ran, because {shared}."]
        lines += confirmation_lines(cands)
        lines += streams_lines(cands)
        lines += roof_lines(data, cands)
        lines += [""] + figdata.figure_block(data, figdata.CANDIDATES) + [""]
        lines += sequence_table(cands)
        lines += ["### Configuration in force", ""] + [_settings(data, c) for c in cands] + [""]
        problems = [c for c in cands if text(c.get("status")) in _NOT_RANKED]
        if problems:
            lines += ["### Not ranked", ""]
            lines += not_ranked_lines(problems)
            lines.append("")
        lines += gate_lines(cands)
    skipped = data.skipped_plugins
    if skipped:
        lines += ["### Skipped plugins", ""]
        for s in skipped:
            reasons = "; ".join(text(r) for r in as_list(s.get("reasons"))) or "no reason recorded"
            lines.append(f"- `{text(s.get('plugin')) or 'unnamed plugin'}`: {reasons}")
        lines.append("")
    return lines


def not_ranked_lines(problems: list[dict]) -> list[str]:
    """One line per distinct status and reason, naming every candidate it applies to.

    A reason shared by many candidates (every INT8 setting the fidelity check could not judge) is read
    once, not once per candidate.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for c in problems:
        reason = fmt.plain_reason(text(c.get("reason"))) or "no reason recorded"
        groups.setdefault((text(c.get("status")), reason), []).append(f"**{label(c)}**")
    return [f"- {fmt.series(names)} — {status}: {reason}" for (status, reason), names in groups.items()]
