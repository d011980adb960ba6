"""Summary: one paragraph on where the model stands, the best measured deployment, and the biggest
remaining win (labelled as an estimate)."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, dig, latency, p50, text
from planner.report.sections import requirements
from planner.report.sections.candidates import label
from planner.report.sections.hardware import machine_phrase
from planner.report.sections.roadmap import step_measured, step_plugins
from planner.results import fidelity_view
from planner.results.view import check_on_your_data, generated_pass_caution, unconfirmed_lead


def _model_sentence(data: ReportData) -> str:
    m = data.model
    if not m:
        return f"The model was {data.missing('loading the model')}."
    name = text(m.get("name")) or text(m.get("source")) or "The model"
    facts = []
    if m.get("source") and m.get("source") != m.get("name"):
        facts.append(f"`{m['source']}`")
    if m.get("parameters") is not None:
        facts.append(f"{fmt.number(m['parameters'])} parameters")
    if m.get("size_bytes") is not None:
        facts.append(f"{fmt.size(m['size_bytes'])} of weights")
    inputs = data.inputs
    if inputs:
        # Name, dtype and shape here; how the values were drawn is in the Baseline section.
        described = [fmt.tensor(i, values=False) for i in inputs]
        facts.append(("input " if len(described) == 1 else f"{len(described)} inputs: ") + fmt.series(described))
    target = text(data.results.get("target"))
    where = f" on {machine_phrase(data)}" if data.hardware else ""
    return (f"**{name}**" + (f" ({'; '.join(facts)})" if facts else "") + where
            + (f", planned for the `{target}` target" if target else "") + ".")


def _baseline_sentence(data: ReportData) -> str:
    b = data.baseline
    if not b:
        return f"The baseline was {data.missing('profiling the baseline')}."
    lat = latency(b)
    runtime = text(b.get("runtime")) or "the original runtime"
    tail = [f"p{q} {fmt.ms(lat[f'p{q}_ms'])}" for q in ("95", "99") if lat.get(f"p{q}_ms") is not None]
    sentence = f"Out of the box ({runtime}) it takes {fmt.ms(lat.get('p50_ms'))} at p50"
    sentence += (" (" + ", ".join(tail) + ")") if tail else ""
    bound = text(as_dict(b.get("bottleneck")).get("bound"))
    return sentence + (f" and is {bound}-bound on this machine." if bound else ".")


def _best_sentence(data: ReportData) -> str:
    best = data.best
    others = [c for c in data.candidates if not data.is_reference(c)]
    if best is None:
        if not others:
            return f"No optimized candidate was measured ({data.missing('measuring candidates')})."
        return ("No optimized candidate was both measured and close enough to the original model's outputs "
                "to rank (see Candidates), so the baseline stands.")
    lead = _unconfirmed_lead(data)
    if data.is_reference(best):
        if lead is not None:
            return "No confirmed candidate beat the baseline: it stays the fastest confirmed configuration."
        return ("None of the measured candidates beat the baseline: it stays the fastest "
                "configuration measured here.")
    fid = as_dict(best.get("fidelity"))
    label = text(best.get("label")) or text(best.get("plugin")) or "a candidate"
    ranked_by = data.ranked_by
    ranked = f" (ranked by {ranked_by})" if ranked_by else ""
    if lead is not None:
        # A faster candidate waits on a check with real data: this one is the best confirmed, not the best.
        sentence = (f"Best confirmed{ranked}: **{label}** at {fmt.speedup(data.speedup(best))}: p50 "
                    f"{fmt.ms(p50(best))} against {fmt.ms(data.base_p50)} for the baseline (measured)")
    else:
        sentence = (f"The best deployment found{ranked} is "
                    f"**{label}**: p50 {fmt.ms(p50(best))} against {fmt.ms(data.base_p50)} for the "
                    f"baseline, {fmt.speedup(data.speedup(best))} the baseline's speed (measured)")
    # A dense map, a sequence or a regression output is described by its own test, never by top-1 or cosine.
    by_kind = fidelity_view.phrases(fid)
    agreement = list(by_kind)
    if fid.get("cosine") is not None and not by_kind:
        agreement.append(f"cosine {fmt.cosine(fid['cosine'])}")
    if fid.get("top1_agreement") is not None and not by_kind:
        agreement.append(f"top-1 agreement {fmt.pct(fid['top1_agreement'])}")
    if fid.get("accuracy") is not None:
        agreement.append(f"accuracy {fmt.accuracy(fid['accuracy'])}")
    if agreement:
        sentence += ", with " + " and ".join(agreement) + " against the original"
        if "generated inputs" in text(fid.get("decided_by")):
            sentence += " on generated inputs"
    caution = generated_pass_caution(best, code="`")
    if caution:
        sentence += f"; {caution}"
    return sentence + "." + _load_caveat(data, best)


def _unconfirmed_lead(data: ReportData) -> dict | None:
    """The fastest candidate not established on real data, when it is faster than the best confirmed one."""
    best = data.best
    lead = unconfirmed_lead(data.candidates, data.speedup(best) if best is not None else None)
    return dict(lead) if lead is not None else None


def _unconfirmed_sentence(data: ReportData) -> str:
    """'Up to 3.9x (Y) if it holds on your data: re-run with `--val-data DIR`.' after the best confirmed
    candidate, with what 'not established on real data' means (its first use in the report); '' without
    such a candidate."""
    lead = _unconfirmed_lead(data)
    if lead is None:
        return ""
    return (f"{check_on_your_data(lead, code='`')}. {label(lead)} is *not established on real data*: its outputs "
            "drifted from the original's on generated inputs, which cannot tell whether that matters on real data, "
            "so it is not ranked.")


def _load_caveat(data: ReportData, best: dict) -> str:
    """A warning beside the headline speedup when either of its two timings was taken under interference.

    Multi-threaded PyTorch in particular can run many times slower while another process holds a core
    (each parallel op waits for its descheduled thread), which inflates a speedup over it.
    """
    disturbed = [name for name, record in (("the baseline", data.baseline), ("this candidate", best))
                 if as_list(as_dict(as_dict(record).get("audit")).get("issues"))]
    if not disturbed:
        return ""
    return (f" Caution: {' and '.join(disturbed)} {'was' if len(disturbed) == 1 else 'were'} timed while other "
            "processes used the cores (see Measurement conditions), so this speedup may not hold on an idle "
            "machine: re-run the plan there before relying on it.")


def _requirements_sentence(data: ReportData) -> str:
    found, subject = requirements.checks(data)
    if not found:
        return f"Requirements were {data.missing('checking the requirements')}."

    def _named(c: dict) -> str:
        target = c.get("target")
        name = requirements.name_of(c)
        return name + (f" {requirements.value_text(name, target)}" if target is not None else "")

    groups: dict[str, list[str]] = {"missed": [], "met": [], "other": []}
    for c in found:
        verdict = requirements.verdict(c)
        # An impossible requirement is missed too; its margin says why it cannot be met. One met only on the
        # median is not judged at its percentile: it goes with the others, its margin saying what was judged.
        key = ("missed" if verdict == "cannot be met" else verdict if verdict == "missed"
               else "met" if requirements.fully_met(c) else "other")
        groups[key].append(f"{_named(c)} ({requirements.margin(c)})" if key != "met" else _named(c))
    parts = []
    if groups["missed"]:
        parts.append("it misses " + " and ".join(groups["missed"]))
    if groups["met"]:
        parts.append("it meets " + " and ".join(groups["met"]))
    if groups["other"]:
        parts.append("not judged: " + " and ".join(groups["other"]))
    on = " (checked on the baseline)" if subject else ""
    return f"Against the requirements{on}, " + "; ".join(parts) + "."


def _biggest_win(data: ReportData) -> str:
    # An informational finding (nothing to change: e.g. only the class count is unaligned) is no win.
    findings = [f for f in data.findings if f.get("severity") != "info"]
    if findings:
        f = findings[0]
        layers = ", ".join(f"`{x}`" for x in f.get("layers") or [])
        basis = text(f.get("impact_basis")) or "basis not recorded"
        impact = f"{fmt.pct(f.get('impact'))} — {basis}" if f.get("impact") is not None else basis
        return (f"The single biggest remaining win is architectural and needs retraining: "
                f"{text(f.get('title')) or text(f.get('id'))}" + (f" in {layers}" if layers else "")
                + f" (estimate: {impact}).")
    remaining = [step for step in data.steps if not step_measured(data, step)]
    # A step whose plugin cannot run on this model (channels-last for an ONNX file: a PyTorch setting)
    # is no next step for it; it is named only when nothing else remains, with the reason.
    runnable = [step for step in remaining
                if not any(data.skip_reason(p) for p in step_plugins(step))]
    for step in runnable:
        what = text(step.get("title")) or "a planned step"
        expected = text(step.get("expected")) or "effect not estimated"
        return (f"The biggest remaining step, not measured in this run, is {what} "
                f"(estimate: {expected}).")
    if remaining:
        step = remaining[0]
        what = text(step.get("title")) or "a planned step"
        return (f"Every step this plan could measure on this model was measured; {what} was not "
                f"({'; '.join(r for r in (data.skip_reason(p) for p in step_plugins(step)) if r)}).")
    return "No remaining win beyond the measured candidates was identified."


def render(data: ReportData) -> list[str]:
    """The Summary section."""
    lines = ["## Summary", ""]
    if data.is_partial:
        failed = [label(c) for c in data.candidates if text(c.get("status")) == "failed"]
        reasons = list(data.warnings) + ([f"{len(failed)} candidate(s) failed: {', '.join(failed)} "
                                          "(reasons under Candidates)"] if failed else [])
        why = "; ".join(reasons) or "no warnings recorded"
        state = "" if data.status == "partial" else f": {data.status}"
        lines += [f"> **Partial report{state} — {why}**", ""]
    paragraph = [_model_sentence(data), _baseline_sentence(data)]
    if data.baseline or data.candidates:
        paragraph.append(_best_sentence(data))
        paragraph.append(_unconfirmed_sentence(data))
    paragraph += [_requirements_sentence(data), _biggest_win(data)]
    lines += [" ".join(p for p in paragraph if p), ""]
    if data.warnings and not data.is_partial:
        lines += ["Warnings from the run:", ""] + [f"- {w}" for w in data.warnings] + [""]
    if dig(data.results, "quick") is True:
        lines += ["*Quick mode: fewer samples and smaller sweeps than a full run.*", ""]
    return lines
