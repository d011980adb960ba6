"""All candidates: every configuration measured, its numbers and status; rejections, failures, skips."""

from __future__ import annotations

from typing import Any, Mapping

from planner.report import figdata, fmt
from planner.report.data import ReportData
from planner.report.sections.baseline import PERCENTILE_MIN_SAMPLES, sweep_skipped
from planner.report.sections.validation import validation_lines
from planner.results import CandidateResult, Status, energy_view, fidelity_view, names, roof_share
from planner.results.rows import CandidateRow
from planner.results.values import OutputKind, StreamPoint

_NOT_RANKED = (Status.REJECTED, Status.UNCONFIRMED, Status.FAILED, Status.SKIPPED)
# Why a sweep stopped or was skipped is said in words, not listed among the settings in force.
_SWEEP_NOTES = ("sweep_stopped", "sweep_skipped", "sequence_sweep_stopped", "streams_skipped")


def label(cand: CandidateResult) -> str:
    """A candidate's short label, the key records match it on (an interaction names its candidates by it); a reader
    sees `planner.results.names.title`."""
    return cand.label or cand.plugin or names.UNNAMED


def field_name(key: str, words: Mapping[str, str] | None = None) -> str:
    """A recorded field's name for a reader (`planner.results.names.field`); a runtime's or the environment's own
    name in capitals (OpenVINO's INFERENCE_NUM_THREADS, OMP_NUM_THREADS) as code, to look up as it is."""
    name = names.field(key, dict(words or {}))
    return fmt.code(name) if key.isupper() else name


def record_text(record: Mapping[str, Any], words: Mapping[str, str] | None = None) -> str:
    """A recorded object of settings or facts as 'name value; ...', each name in a reader's words."""
    return "; ".join(f"{field_name(k, words)} {fmt.number(v)}" for k, v in record.items())


def _note(notes: dict[str, Any], key: str) -> str:
    """One entry of a plain JSON object inside a typed record (a candidate's `info`, the ceilings' details) as
    text, '' when it holds none."""
    value = notes.get(key)
    return "" if value is None else str(value)


def _decided_by(cand: CandidateResult) -> str:
    """Which fidelity test passed or rejected the candidate ('' when none was recorded)."""
    return cand.fidelity.decided_by if cand.fidelity is not None else ""


def _cannot_judge(cand: CandidateResult) -> str:
    """Why the fidelity check cannot judge the candidate ('' when it can, or nothing was compared)."""
    return cand.fidelity.cannot_judge if cand.fidelity is not None else ""


def ordered(data: ReportData) -> list[CandidateResult]:
    """Ranked candidates by rank, then the rest in the order they were measured."""
    return [row.cand for row in data.rows]


def p95_cell(cand: CandidateResult) -> str:
    """p95 latency, or the sample count it needs."""
    lat = cand.latency_ms
    if lat is None:
        return fmt.NOT_MEASURED
    if lat.p95_ms is not None:
        return fmt.ms(lat.p95_ms)
    return f"needs ≥{PERCENTILE_MIN_SAMPLES['p95']} samples"


def fidelity_headers(cands: list[CandidateResult]) -> tuple[str, str]:
    """The fidelity columns' titles: ("Cosine", "Top-1") where every output is class scores, else ("Error",
    "Agreement"), whose cells name their own test (a dense map has no top-1, and its cosine is no test)."""
    if all(fidelity_view.kind(c.fidelity) == OutputKind.CLASSES for c in cands):
        return "Cosine", "Top-1"
    return "Error", "Agreement"


def fidelity_cells(cand: CandidateResult, *, by_kind: bool = False) -> tuple[str, str]:
    """(cosine, top-1) as table cells; the reference is marked as such.

    `by_kind` (the "Error" and "Agreement" columns): each cell names its test, in the output kind's own
    terms ('6.1e-08 (0-1 scale)', 'map IoU 0.98'; 'cosine 0.99999', 'top-1 100%' for class scores).
    """
    fid = cand.fidelity
    if fid is None:
        return fmt.NOT_MEASURED, fmt.NOT_MEASURED
    if fid.reference:
        return "reference", "reference"
    if by_kind:
        return fidelity_view.error_cell(fid), fidelity_view.agreement_cell(fid)
    if fid.top1_agreement is not None:
        top1_cell = fmt.pct(fid.top1_agreement)
    elif fid.top1_samples == 0:
        top1_cell = "no test (margins within error)"
    else:
        top1_cell = "n/a (output is not class scores)"
    return fmt.cosine(fid.cosine), top1_cell


def has_accuracy(cands: list[CandidateResult]) -> bool:
    """Whether any candidate was measured against labels (then the table shows an accuracy column)."""
    return any(c.fidelity is not None and c.fidelity.accuracy is not None for c in cands)


def accuracy_cell(cand: CandidateResult) -> str:
    """Accuracy on the labelled validation data, or why there is none."""
    fid = cand.fidelity
    return fmt.accuracy(fid.accuracy) if fid is not None and fid.accuracy is not None else fmt.NOT_MEASURED


def gate_lines(cands: list[CandidateResult]) -> list[str]:
    """Which fidelity test passed or rejected each candidate ([] when none recorded one)."""
    decided = [(c, _decided_by(c)) for c in cands if _decided_by(c)]
    if not decided:
        return []
    return (["### Fidelity check: the test that decided", ""]
            + [f"- **{names.title(c)}** ({c.status}): {fmt.plain_reason(d)}" for c, d in decided]
            + [""])


def generated_inputs_lines(cands: list[CandidateResult]) -> list[str]:
    """What a fidelity check on generated inputs can say, when this run's checks ran on them ([] otherwise)."""
    generated = any("generated inputs" in _decided_by(c) for c in cands)
    unsettled = [c for c in cands if c.status == Status.UNCONFIRMED and c.fidelity is not None
                 and c.fidelity.settle_samples is not None and _cannot_judge(c)]
    unjudged = [c for c in cands if c.status == Status.UNCONFIRMED and _cannot_judge(c) and c not in unsettled]
    unconfirmed = [names.title(c) for c in cands if c.status == Status.UNCONFIRMED and not _cannot_judge(c)]
    if not generated and not unconfirmed and not unjudged and not unsettled:
        return []
    lines = [""] + (["The fidelity checks ran on generated inputs (no validation data was given): a pass says the "
                     "outputs agree with the original's on those inputs, not that accuracy holds on real data."]
                    if generated else [])
    if unjudged:
        why = _cannot_judge(unjudged[0])
        settle = ("`--val-data DIR` with real inputs (labelled, so accuracy decides), or the model's trained weights"
                  if generated else "the model's trained weights, or labelled `--val-data DIR` (accuracy then decides)")
        lines.append(f"*Cannot judge* ({fmt.series([names.title(c) for c in unjudged])}): not established on real "
                     "data. The check compares each candidate with the original on the part of the outputs that "
                     f"depends on the input, and here {why}. Nothing on these inputs could fail a candidate that "
                     f"changes the arithmetic, so none is called passed; what would settle it: {settle}.")
    for c in unsettled:
        # Real, labelled data, too little of it to tell the drop from the budget: more of it settles it.
        lines.append(f"*Not established* ({names.title(c)}): {_cannot_judge(c)}. The drop is judged on its 95% "
                     "interval, so a candidate is only called within the budget when the whole interval is.")
    if unconfirmed:
        lines.append(f"*Unconfirmed* ({fmt.series(unconfirmed)}): not established on real data. The outputs "
                     "drifted from the original's on generated inputs, which cannot tell whether that matters on "
                     "real data. A candidate that changes the arithmetic (lower precision or an approximation) "
                     "and drifts there is not ranked until `--val-data DIR` checks it on your data.")
    return lines


def dropped_note(cand: CandidateResult) -> str:
    """Why the budgeted search gave a candidate no more time than the quick screen ('' when it did not): its
    row's figures are the screen's."""
    return f"screen figures only: {cand.dropped}" if cand.dropped else ""


def _rate_cell(best: StreamPoint | None) -> str:
    """The best throughput cell: '1,234/s @ batch 8', with the streams where there were several."""
    if best is None:
        return fmt.NOT_MEASURED
    return (f"{fmt.rate(best.samples_per_s)} @ batch {fmt.number(best.batch)}"
            + (f" × {fmt.number(best.streams)} streams" if best.streams > 1 else ""))


def _row(data: ReportData, row: CandidateRow, *, with_accuracy: bool = False, by_kind: bool = False,
         with_note: bool = False) -> list[str]:
    cand, rank = row.cand, row.rank
    cos, top1 = fidelity_cells(cand, by_kind=by_kind)
    size = cand.size_bytes
    if size is None and data.is_reference_cand(cand):
        size = data.model_record.size_bytes if data.model_record is not None else None
    accuracy = [accuracy_cell(cand)] if with_accuracy else []
    return [fmt.number(rank) if rank is not None else "—",
            f"**{names.title(cand)}**" if cand is data.best_cand else names.title(cand),
            cand.precision or "—",
            fmt.ms(cand.p50), p95_cell(cand), energy_view.energy_cell(cand), _rate_cell(cand.peak_rate()),
            fmt.size(cand.peak_memory_bytes), fmt.size(size), cos, top1, *accuracy,
            fmt.speedup(row.speedup) if cand.p50 is not None else "—", str(cand.status),
            *([dropped_note(cand)] if with_note else [])]


def shared_sweep_skip(data: ReportData) -> str:
    """The one reason every measured candidate's batch sweep was skipped for, or '' when they differ."""
    reasons = {sweep_skipped(c) for c in data.run.candidates if c.latency_ms is not None}
    return reasons.pop() if len(reasons) == 1 else ""


def _settings(data: ReportData, cand: CandidateResult) -> str:
    # The short label and plugin are the keys results.json and `planner bench` know the candidate by.
    title = names.title(cand)
    keys = [f"label {fmt.code(cand.label)}" if cand.label and cand.label != title else "",
            f"plugin {fmt.code(cand.plugin)}" if cand.plugin else "plugin not recorded"]
    parts = [f"- **{title}** ({', '.join(k for k in keys if k)})"]
    if cand.config:
        parts.append(f"config `{fmt.compact(cand.config)}`")
    info = {k: v for k, v in cand.info.items() if k not in _SWEEP_NOTES}
    if info:
        parts.append("in force: " + record_text(info))
    skipped = sweep_skipped(cand)
    if skipped and skipped != shared_sweep_skip(data):
        parts.append(f"batch sweep skipped: {skipped}")
    threads = {k: v for k, v in cand.threads.items() if v not in (None, [], "")}
    if threads:
        parts.append("threads: " + record_text(threads))
    if cand.memory_basis:
        parts.append(f"memory basis: {cand.memory_basis}")
    return parts[0] + (": " + ", ".join(parts[1:]) if len(parts) > 1 else "")


APPLIED = 5
"""How many of the best ranked candidates the evidence shows in their runtime's own code (the Summary's top five)."""


def apply_lines(data: ReportData) -> list[str]:
    """The best ranked candidates' lines in their runtime's own API, as their plugins wrote them (not the baseline's,
    which is the model as it comes); [] in files written before plugins did."""
    ranked = [row.cand for row in data.rows if row.rank is not None and not data.is_reference_cand(row.cand)
              and names.apply_code(row.cand)][:APPLIED]
    if not ranked:
        return []
    lines = ["### Apply: the best ranked candidates in their runtime's own API", "",
             "Each candidate's settings as its runtime's own calls (`model` and `x` stand for your module and input; "
             "a file name is the one its package holds). Where no single call makes a change, a comment says what "
             "to do.", ""]
    for cand in ranked:
        lines += [f"**{names.title(cand)}**", "", "```python", names.apply_code(cand), "```", ""]
    return lines


def sequence_table(cands: list[CandidateResult]) -> list[str]:
    """p50 by sequence length, one row per candidate with a sequence sweep ([] unless two have one)."""

    def stopped(cand: CandidateResult) -> str:
        return _note(cand.info, "sequence_sweep_stopped")

    swept = [(c, {p.length: p for p in c.sequence_sweep}) for c in cands]
    swept = [(c, points) for c, points in swept if points or stopped(c)]
    # Only the baseline sweeps sequence lengths today; its table is in the baseline section already.
    if len(swept) < 2:
        return []
    lengths = sorted({n for _, points in swept for n in points})
    rows = [[names.title(c)] + [fmt.ms(points[n].latency_p50_ms) if n in points else fmt.NOT_MEASURED for n in lengths]
            for c, points in swept]
    lines = ["### p50 latency by sequence length", ""]
    if lengths:
        lines += fmt.table(["Candidate"] + [f"{fmt.number(n)} tokens" for n in lengths], rows) + [""]
    lines += [f"- {names.title(c)}: the sequence sweep stopped because {stopped(c)}" for c, _ in swept if stopped(c)]
    return lines + [""]


def confirmation_lines(cands: list[CandidateResult]) -> list[str]:
    """How the quick screen's leaders fared when measured again with the full method: the table shows the full
    figure, the one the ranking used, and only a leader whose two figures disagree is named."""
    confirmed = [(c, c.confirmation) for c in cands if c.confirmation is not None]
    if not confirmed:
        return []
    held = sum(conf.reproduced for _, conf in confirmed)
    turns = any(conf.interleaved > 1 for _, conf in confirmed)
    lines = ["", f"The quick screen times each candidate for about 2 seconds; its {len(confirmed)} leaders were "
             "measured again with the full method before ranking" + (", in turns" if turns else "")
             + ". The table, the ranking and the Roadmap use those full figures, not the screen's; "
             f"{held} of {len(confirmed)} agreed with the screen within 10%."]
    beside = next((conf.baseline_p50_ms for _, conf in confirmed if conf.baseline_p50_ms is not None), None)
    if beside is not None:
        lines[-1] += (f" The baseline took its turns beside them ({fmt.ms(beside)} there): their speedups are ratios "
                      "measured side by side, under one load; the other rows' are over the baseline's profile.")
    revisited = [names.title(c) for c, conf in confirmed if conf.revisited]
    if revisited:
        lines[-1] += (f" {fmt.series(revisited)} had been stopped early by {'its' if len(revisited) == 1 else 'their'} "
                      "screen as clearly slower, but close enough to the best to be timed again with the leaders.")
    for c, conf in confirmed:
        if conf.reproduced:
            continue
        direction = "slower" if conf.rel_change > 0 else "faster"
        lines.append(f"- **{names.title(c)}**: the full method measured it {fmt.pct(abs(conf.rel_change))} {direction} "
                     "than the screen" + (f" — {conf.note}" if conf.note else ""))
    return lines


def streams_lines(cands: list[CandidateResult]) -> list[str]:
    """Rows/s one request at a time against the runtime's parallel streams, at each candidate's best batch."""
    # A point without a rate measured nothing (the batch sweep's rule, as CandidateResult.peak_rate reads it).
    measured = [(c, [p for p in c.streams if p.samples_per_s > 0]) for c in cands]
    measured = [(c, points) for c, points in measured if any(p.streams > 1 for p in points)]
    skipped = [(c, _note(c.info, "streams_skipped")) for c in cands]
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
        rows.append([names.title(c), fmt.number(many.batch), fmt.rate(one.samples_per_s) if one else fmt.NOT_MEASURED,
                     fmt.rate(many.samples_per_s), fmt.number(many.streams),
                     fmt.rate(many.sustained_per_s) if many.sustained_per_s else fmt.NOT_MEASURED, many.basis or "—"])
    lines += fmt.table(["Candidate", "Batch", "One request at a time", "With streams", "Streams",
                        "Sustained with streams", "How"], rows)
    lines += [f"- {names.title(c)}: no parallel streams: {why}" for c, why in skipped]
    return lines


def roof_lines(data: ReportData, cands: list[CandidateResult]) -> list[str]:
    """Each measured candidate's share of its own precision's roof (an INT8 candidate against the INT8 roof), in
    words under the table; [] when no candidate recorded one (files written before the share was)."""
    if not any(c.roof_share is not None for c in cands):
        return []
    ceil = data.ceilings
    peaks, details = (ceil.peak_flops, ceil.details) if ceil is not None else ({}, {})
    lines = ["", "Share of its own roof: the model's FLOPs per call (2 per multiply-add; int8 operations counted "
             "alike) over the candidate's p50, against the measured peak of the precision it computes in. A "
             "candidate that removes work (pruning, low rank, a new architecture) has none: the model's FLOPs "
             "would overstate what it does.", ""]
    for c in cands:
        share = roof_share.phrase(c.roof_share)
        precision = c.precision.lower()
        if not share and c.p50 is not None and precision and precision not in peaks:
            why = _note(details, f"{precision}_omitted") or "not measured on this machine"
            share = f"no {precision.upper()} roof ({why})"
        if share:
            lines.append(f"- **{names.title(c)}**: {share}")
    return lines


def render(data: ReportData) -> list[str]:
    """The All candidates section."""
    lines = ["## All candidates", ""]
    cands = ordered(data)
    if not cands:
        lines += [f"No candidates: {data.missing('measuring candidates')}.", ""]
        lines += figdata.figure_block(data, figdata.CANDIDATES) + [""]
    else:
        ranked_by = data.run.ranking.by if data.run.ranking is not None else ""
        lines += [("Ranked by " + ranked_by + "; " if ranked_by else "")
                  + "only candidates that pass the fidelity check are ranked (the fidelity check: "
                  + fmt.fidelity_rule(data.run.candidates) + "). Speedup is the baseline's p50 over the candidate's.",
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
                           [_row(data, row, with_accuracy=with_accuracy, by_kind=by_kind, with_note=with_note)
                            for row in data.rows])
        lines += ["", energy_view.energy_note(data.run, cands)]
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
        lines += apply_lines(data)
        problems = [c for c in cands if c.status in _NOT_RANKED]
        if problems:
            lines += ["### Not ranked", ""]
            lines += not_ranked_lines(problems)
            lines.append("")
        lines += gate_lines(cands)
    if data.run.not_reached:
        lines += ["### Not reached", "", "The run was cancelled before these; nothing of them was measured:", ""]
        lines += [f"- {name}" for name in data.run.not_reached] + [""]
    skipped = data.run.skipped_plugins
    if skipped:
        lines += ["### Skipped plugins", ""]
        for s in skipped:
            lines.append(f"- `{s.plugin or 'unnamed plugin'}`: {'; '.join(s.reasons) or 'no reason recorded'}")
        lines.append("")
    return lines


def not_ranked_lines(problems: list[CandidateResult]) -> list[str]:
    """One line per distinct status and reason, naming every candidate it applies to.

    A reason shared by many candidates (every INT8 setting the fidelity check could not judge) is read
    once, not once per candidate.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for c in problems:
        reason = fmt.plain_reason(c.reason) or "no reason recorded"
        groups.setdefault((str(c.status), reason), []).append(f"**{names.title(c)}**")
    return [f"- {fmt.series(names)} — {status}: {reason}" for (status, reason), names in groups.items()]
