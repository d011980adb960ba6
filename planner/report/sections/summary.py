"""Summary: the decision on one screen. Where the model stands, then one labelled line each for the decision,
its measured gain, its accuracy risk, the requirements, the commands that deploy and verify it, and the biggest
remaining win (labelled as an estimate unless measured)."""

from __future__ import annotations

import re

from planner.report import fmt, handover
from planner.report.data import ReportData
from planner.report.sections import requirements, shortlist
from planner.report.sections.hardware import machine_phrase
from planner.report.sections.roadmap import exact_finding, step_applies, step_measured, step_plugins
from planner.results import CandidateResult, Status, energy_view, fidelity_view, names
from planner.results.analysis import Severity
from planner.results.counts import CandidateCounts
from planner.results.decisions import SOURCE_FILE, SOURCE_FLAG, CheckStatus, RequirementCheck
from planner.results.values import REPRODUCE_TOLERANCE, Deployment
from planner.results.view import (
    check_on_your_data,
    generated_pass_caution,
    not_established_why,
    unconfirmed_lead,
    unconfirmed_term,
)


def _model_sentence(data: ReportData) -> str:
    m = data.model_record
    if m is None:
        return f"The model was {data.missing('loading the model')}."
    name = m.name or m.source or "The model"
    facts = []
    if m.source and m.source != m.name:
        facts.append(f"`{m.source}`")
    if m.parameters is not None:
        facts.append(f"{fmt.number(m.parameters)} parameters")
    if m.size_bytes is not None:
        facts.append(f"{fmt.size(m.size_bytes)} of weights")
    inputs = data.model_inputs
    if inputs:
        # Name, dtype and shape here; how the values were drawn is in the Baseline section.
        described = [fmt.tensor(i, values=False) for i in inputs]
        facts.append(("input " if len(described) == 1 else f"{len(described)} inputs: ") + fmt.series(described))
    target = data.run.target
    where = f" on {machine_phrase(data)}" if data.run.hardware is not None else ""
    return (f"**{name}**" + (f" ({'; '.join(facts)})" if facts else "") + where
            + (f", planned for the `{target}` target" if target else "") + ".")


def _baseline_sentence(data: ReportData) -> str:
    b = data.run.baseline
    if b is None:
        return f"The baseline was {data.missing('profiling the baseline')}."
    lat = b.latency_ms
    runtime = b.runtime or "the original runtime"
    tail = [f"p{q} {fmt.ms(ms)}" for q, ms in (("95", lat.p95_ms), ("99", lat.p99_ms)) if ms is not None]
    sentence = f"Out of the box ({runtime}) it takes {fmt.ms(lat.p50_ms)} at p50"
    sentence += (" (" + ", ".join(tail) + ")") if tail else ""
    bound = b.bottleneck.bound if b.bottleneck is not None else None
    sentence += f" and is {bound}-bound on this machine." if bound else "."
    return sentence + (f" That timing is invalid: {b.invalid}." if b.invalid else "")


def _decision(data: ReportData) -> list[str]:
    """The Summary's decision, its measured gain and its accuracy risk, one labelled line each."""
    best = data.best_cand
    others = [c for c in data.run.candidates if not data.is_reference_cand(c)]
    if best is None:
        if not others:
            return [f"**Decision**: none yet: no optimized candidate was measured "
                    f"({data.missing('measuring candidates')})."]
        return ["**Decision**: keep the model as it is: no optimized candidate was both measured and close enough "
                "to the original model's outputs to rank (see Appendix › All candidates), so the baseline stands."]
    lead = _unconfirmed_lead(data)
    unconfirmed = f" {_unconfirmed_sentence(lead)}" if lead is not None else ""
    if data.is_reference_cand(best):
        if lead is not None:
            return ["**Decision**: keep the model as it is. No confirmed candidate beat the baseline: it stays the "
                    f"fastest confirmed configuration.{unconfirmed}"]
        return ["**Decision**: keep the model as it is. None of the measured candidates beat the baseline: it stays "
                "the fastest configuration measured here."]
    ranked_by = data.run.ranking.by if data.run.ranking is not None else ""
    ranked = f" (ranked by {ranked_by})" if ranked_by else ""
    which = "the best confirmed candidate" if lead is not None else "the best deployment found"
    invalid = data.run.baseline.invalid if data.run.baseline is not None else ""
    beside = best.confirmation.baseline_p50_ms if best.confirmation is not None else None
    if beside is not None:
        # The ratio of two medians timed in the same turns: the profile's figure is named, not divided by.
        profile = f"; its profile's timing is invalid: {invalid}" if invalid else (
            f"; its profile read {fmt.ms(data.base_ms)}" if data.base_ms is not None else "")
        gain = (f"**Measured gain**: p50 {fmt.ms(best.p50)} against {fmt.ms(beside)} for the baseline timed in the "
                f"same turns{profile}: {fmt.speedup(data.speedup_of(best))} the baseline's speed, measured side by "
                "side.")
    elif invalid:
        gain = (f"**Measured gain**: p50 {fmt.ms(best.p50)}; no speedup is worked out, because the baseline's own "
                f"timing is invalid: {invalid}.")
    else:
        gain = (f"**Measured gain**: p50 {fmt.ms(best.p50)} against {fmt.ms(data.base_ms)} for the baseline, "
                f"{fmt.speedup(data.speedup_of(best))} the baseline's speed.{_load_caveat(data, best)}")
    lines = [f"**Decision**: deploy **{names.title(best)}**, {which}{ranked}.{unconfirmed}", gain]
    if data.run.energy_source is not None:  # a plan that looked for an energy counter (older files did not)
        lines.append(f"**Energy**: {_energy(data, best)}")
    return lines + [f"**Accuracy risk**: {_risk(best)}"]


def _energy(data: ReportData, best: CandidateResult) -> str:
    """The best candidate's and the baseline's J/inference, or 'unavailable' and why (never estimated)."""
    base = next((c for c in data.run.candidates if data.is_reference_cand(c)), None)
    source = data.run.energy_source
    if source is None or not source.available:
        return energy_view.source_words(source)
    return (f"{energy_view.cell_phrase(best)} against {energy_view.cell_phrase(base)} for the baseline "
            f"({source.scope}, net of idle)")


def _risk(best: CandidateResult) -> str:
    """What the fidelity check measured of the best candidate, and what it cannot tell."""
    fid = best.fidelity
    # A dense map, a sequence or a regression output is described by its own test, never by top-1 or cosine.
    agreement = fidelity_view.facts(fid)
    sentence = " and ".join(agreement) + " against the original" if agreement else "no fidelity check was recorded"
    if agreement and fid is not None and "generated inputs" in fid.decided_by:
        sentence += " on generated inputs"
    caution = generated_pass_caution(best, code="`")
    if caution:
        sentence += f"; {caution}"
    return sentence + "."


def _unconfirmed_lead(data: ReportData) -> CandidateResult | None:
    """The fastest candidate not established on real data, when it is faster than the best confirmed one."""
    best = data.best_cand
    return unconfirmed_lead(data.run.candidates, data.speedup_of(best) if best is not None else None)


def _unconfirmed_sentence(lead: CandidateResult) -> str:
    """'Up to 3.9x (Y) if it holds on your data: re-run with `--val-data DIR`.' after the best confirmed
    candidate, with what 'not established on real data' means (its first use in the report)."""
    return (f"{check_on_your_data(lead, code='`')}. {names.title(lead)} is *{unconfirmed_term(lead)}*: "
            f"{not_established_why(lead)}, so it is not ranked.")


def _load_caveat(data: ReportData, best: CandidateResult) -> str:
    """A warning beside the headline speedup when either of its two timings was taken under interference.

    Multi-threaded PyTorch in particular can run many times slower while another process holds a core
    (each parallel op waits for its descheduled thread), which inflates a speedup over it.
    """
    baseline_audit = data.run.baseline.audit if data.run.baseline is not None else None
    disturbed = [name for name, audit in (("the baseline", baseline_audit), ("this candidate", best.audit))
                 if audit is not None and audit.disturbed]
    if not disturbed:
        return ""
    return (f" Caution: {' and '.join(disturbed)} {'was' if len(disturbed) == 1 else 'were'} timed while other "
            "processes used the cores (see Appendix › Measurement conditions), so this speedup may not hold on an idle "
            "machine: re-run the plan there before relying on it.")


def _requirements_sentence(data: ReportData) -> str:
    found, subject = requirements.checks(data)
    if not found:
        return f"**Requirements**: {data.missing('checking the requirements')}."

    def _named(c: RequirementCheck) -> str:
        name = requirements.name_of(c)
        return name + f" {requirements.value_text(name, c.target)}"

    groups: dict[str, list[str]] = {"missed": [], "met": [], "other": [], "unsettled": []}
    for c in found:
        # An impossible requirement is missed too; its margin says why it cannot be met. One met only on the
        # median is not judged at its percentile: it goes with the others, its margin saying what was judged.
        # One whose interval straddles its target is not established, with how many samples would settle it.
        key = ("missed" if c.status in (CheckStatus.IMPOSSIBLE, CheckStatus.MISSED)
               else "met" if requirements.fully_met(c)
               else "unsettled" if c.status == CheckStatus.NOT_ESTABLISHED else "other")
        groups[key].append(f"{_named(c)} ({requirements.margin(c)})" if key != "met" else _named(c))
    parts = []
    if groups["missed"]:
        parts.append("it misses " + " and ".join(groups["missed"]))
    if groups["met"]:
        parts.append("it meets " + " and ".join(groups["met"]))
    if groups["other"]:
        parts.append("not judged: " + " and ".join(groups["other"]))
    if groups["unsettled"]:
        parts.append("not established: " + " and ".join(groups["unsettled"]))
    on = " (checked on the baseline)" if subject else ""
    verdict = ("not met" if groups["missed"] else "none missed, but not all judged"
               if groups["other"] or groups["unsettled"] else "all met")
    return f"**Requirements**{on}: {verdict} — " + "; ".join(parts) + "."


def _biggest_win(data: ReportData) -> str:
    # An informational finding (nothing to change: e.g. only the class count is unaligned) is no win.
    findings = [f for f in data.sorted_findings if f.severity != Severity.INFO and f.category == "architecture"]
    if findings:
        f = findings[0]
        layers = ", ".join(f"`{x}`" for x in f.layers)
        impact = f"{fmt.pct(f.impact)} — {f.impact_basis or 'basis not recorded'}"
        # What acting on it takes, as the finding says: an exact rewrite (BatchNorm folded) needs no retraining.
        kind = ("an exact rewrite of the model (the same outputs, no retraining)" if exact_finding(data, f)
                else "architectural and needs retraining")
        return (f"The single biggest remaining win is {kind}: {f.title or f.id}"
                + (f" in {layers}" if layers else "") + f" (estimate: {impact}).")
    # A step that does not apply to this model (a PyTorch setting for an ONNX file) is no remaining step at all.
    remaining = [step for step in data.plan_steps if not step_measured(data, step) and step_applies(data, step)]
    # A step whose plugin cannot run on this model (channels-last for an ONNX file: a PyTorch setting)
    # is no next step for it; it is named only when nothing else remains, with the reason.
    runnable = [step for step in remaining
                if not any(data.skipped_because(p) for p in step_plugins(step))]
    if runnable:
        return (f"The biggest remaining step, not measured in this run, is {runnable[0].title or 'a planned step'} "
                f"(estimate: {runnable[0].expected or 'effect not estimated'}).")
    if remaining:
        step = remaining[0]
        reasons = "; ".join(r for r in (data.skipped_because(p) for p in step_plugins(step)) if r)
        return (f"Every step this plan could measure on this model was measured; {step.title or 'a planned step'} "
                f"was not ({reasons}).")
    return "No remaining win beyond the measured candidates was identified."


def _structural_lead(data: ReportData) -> CandidateResult | None:
    """The fastest measured redesign (new weights, speed only) when it is faster than the decision."""
    best = data.best_cand
    floor = max(data.speedup_of(best) or 1.0, 1.0) if best is not None else 1.0
    redesigns = [c for c in data.run.candidates if c.declared is not None and c.declared.arithmetic == "structural"
                 and c.p50 is not None and (data.speedup_of(c) or 0) > floor]
    return max(redesigns, key=lambda c: data.speedup_of(c) or 0) if redesigns else None


def _next(data: ReportData) -> str:
    """The biggest remaining win: a measured redesign faster than the decision, else the profile's estimate."""
    lead = _structural_lead(data)
    if lead is not None:
        return (f"**Next**: the biggest remaining win needs retraining: **{names.title(lead)}** measured "
                f"{fmt.speedup(data.speedup_of(lead))} the baseline's speed (p50 {fmt.ms(lead.p50)}; speed measured, "
                "accuracy not: Roadmap Phase 3).")
    return f"**Next**: {_biggest_win(data)}"


def _package_p50(dep: Deployment, best: CandidateResult) -> float | None:
    """The package's own p50 where it differs from the plan's figure by more than the reproduce tolerance (its
    program is not the one the plan timed); None where the plan's figure stands for it."""
    own = dep.package_p50_ms
    if own is None or not best.p50 or abs(own - best.p50) <= REPRODUCE_TOLERANCE * best.p50:
        return None
    return own


def _commands(data: ReportData) -> list[str]:
    """How to deploy the decision (its hand-over package) and check it; without a package, say so plainly and
    give the command that measures it again."""
    best = data.best_cand
    if best is None or data.is_reference_cand(best):
        return []
    dep = handover.winner(data) or handover.for_candidate(data, best)
    if dep is not None and handover.folder(dep):
        packaged = names.title_of(dep.label, data.run.candidates) if dep.label else names.title(best)
        why = dep.reason.rstrip(".")
        own = _package_p50(dep, best)
        if own is not None:
            # The package runs another program than the one the plan timed (a torch.export archive of the eager
            # module): its own figure, not the plan's, is what a deployment gets.
            why = "; ".join(p for p in (why, f"the package itself measured p50 {fmt.ms(own)} when it was written, "
                                              f"not the plan's {fmt.ms(best.p50)} ({dep.package_basis})") if p)
        return [f"**Deploy**: `{handover.run_command(dep)}` runs **{packaged}** from its package in "
                f"`{handover.folder(dep)}/`" + (f" ({dep.runtime})" if dep.runtime else "")
                + ", from the plan's folder (where results.json is)" + (f"; {why}" if why else "") + ".",
                f"**Verify**: `{handover.run_command(dep)} --check` checks it on the target without the planner "
                "(its files, its outputs on the stored samples against the original's, its latency against the "
                f"recorded p50); `{handover.VERIFY_ALL}` checks every package the plan wrote."]
    if dep is not None:
        why = f"no package was written for it: {dep.reason.rstrip('.') or 'no reason recorded'}"
    elif data.run.deployments:
        why = "no package was written for it"
    else:
        why = ("no deployment package was written (this results.json records none: a plan from before "
               "packaging, or nothing could be packaged)")
    again = (f"; measure it again with {handover.code_span(best.reproduce)}" if best.reproduce
             else "; no command to measure it again was recorded")
    return [f"**Deploy**: {why}{again}."]


def _counts(data: ReportData) -> list[str]:
    """How the optimize run's candidates ended, as the TUI counts them (planner.results.counts); [] before one ran."""
    counts = CandidateCounts.of(data.run)
    if not counts.total:
        return []
    return [f"**Candidates**: {counts.words(noun=False)}; each one's figures, or why it has none, are under "
            "Appendix › All candidates."]


def _budget(data: ReportData) -> list[str]:
    """One line when the time budget left something out; the details are in the Appendix."""
    budget = data.run.budget
    cut = [c for c in budget.cut if c] if budget is not None else []
    if budget is None or not cut:
        return []
    allowed = f"the {fmt.seconds(budget.budget_s)} budget" if budget.budget_s is not None else "the budget"
    spent = "; ".join(p for p in (budget.basis.partition(";")[0], f"{fmt.seconds(budget.spent_s)} spent") if p)
    if len(cut) == 1:
        return [f"**Time budget**: {allowed}{f' ({spent})' if spent else ''} cut work, so no number here stands "
                f"for it: {cut[0].rstrip('.')}."]
    # Each cut begins with what it left out; the candidates it names and the reasons are in the Appendix.
    whats = [re.sub(r" \(.*\)$", "", c.partition(": ")[0]) for c in cut]
    return [f"**Time budget**: {allowed}{f' ({spent})' if spent else ''} cut work: {'; '.join(whats)}. No number "
            "here stands for what it cut; which and why is under Appendix › Time budget."]


def _warnings(data: ReportData) -> list[str]:
    """The run's first warning; all of them are in the Appendix."""
    warnings = [w for w in data.run.warnings if w]
    if not warnings or data.is_partial:
        return []
    more = " (all warnings under Appendix › Warnings from the run)" if len(warnings) > 1 else ""
    return [f"**Warning from the run**: {warnings[0].rstrip('.')}{more}."]


def render(data: ReportData) -> list[str]:
    """The Summary section: what the model is, the decision with its gain and risk, the requirements, the
    commands that deploy and verify it, and what to do next; on one screen (the evidence is in the Appendix)."""
    lines = ["## Summary", ""]
    if data.is_partial:
        failed = [names.title(c) for c in data.run.candidates if c.status == Status.FAILED]
        reasons = [w for w in data.run.warnings if w]
        if failed:
            reasons.append(f"{len(failed)} candidate(s) failed: {', '.join(failed)} "
                           "(reasons under Appendix › All candidates)")
        why = "; ".join(reasons) or "no warnings recorded"
        state = "" if data.status == "partial" else f": {data.status}"
        lines += [f"> **Partial report{state} — {why}**", ""]
    lines += [" ".join((_model_sentence(data), _baseline_sentence(data))), ""]
    items = _decision(data) if data.run.baseline is not None or data.run.candidates else []
    items += [*_counts(data), _requirements_sentence(data), *_commands(data), _next(data), *_budget(data),
              *_warnings(data)]
    lines += [f"- {item}" for item in items] + [""]
    return lines


def _tail(cand: CandidateResult) -> str:
    lat = cand.latency_ms
    if lat is None:
        return ""
    if lat.p95_ms is not None:
        return f", p95 {fmt.ms(lat.p95_ms)}"
    return f" (p95 not measured: {fmt.number(lat.samples)} samples)"


def _set_by(check: RequirementCheck) -> str:
    """' (a default: you set none)' after a target the user did not state."""
    return "" if check.source in (SOURCE_FLAG, SOURCE_FILE) else " (the planner's default: you set none)"


def _would_meet(data: ReportData, missed: list[RequirementCheck]) -> str:
    """What would meet a missed latency target: a faster measured candidate (with why it is not shipped), else the
    next step not measured here, else the profile's biggest architectural lever (an estimate)."""
    latency = next((c for c in missed if c.name == "latency"), None)
    if latency is None:
        return ""
    reqs = data.run.requirements
    target = reqs.latency_ms if reqs is not None else None
    best = data.best_cand
    if target is not None:
        faster = sorted((c for c in data.run.candidates if c.p50 is not None and c.p50 < target and c is not best),
                        key=lambda c: c.p50 or 0.0)
        if faster:
            cand = faster[0]
            why = {Status.UNCONFIRMED: "not established on these samples", Status.REJECTED: "rejected by the "
                   "fidelity check"}.get(cand.status, "")
            return (f" {names.title(cand)} measured p50 {fmt.ms(cand.p50)}" + (f" but was {why}" if why else "") + ".")
    remaining = [s for s in data.plan_steps if not step_measured(data, s) and step_applies(data, s)
                 and step_plugins(s)]
    if remaining:
        return (f" Nothing measured meets it; next to try: {remaining[0].title or 'the next planned step'} "
                "(not measured in this run).")
    findings = [f for f in data.sorted_findings if f.severity != Severity.INFO]
    if findings:
        return f" Nothing measured meets it; the profile points to a redesign: {findings[0].title or findings[0].id}."
    return " Nothing measured meets it."


def headline(data: ReportData) -> str:
    """The decision in one paragraph, first in the report: what to ship, its p50 and tail, its speedup, what it
    risks, whether the targets are met, and what would meet them."""
    best = data.best_cand
    if best is None or data.is_reference_cand(best):
        base = data.base_ms
        return ("**Keep the model as it is**: no measured candidate both beat the baseline"
                + (f" (p50 {fmt.ms(base)})" if base is not None else "") + " and passed the fidelity check.")
    speed = fmt.speedup(data.speedup_of(best))
    side = " (timed side by side)" if best.confirmation is not None and best.confirmation.baseline_p50_ms else ""
    words = [f"**Ship {names.title(best)}**: p50 {fmt.ms(best.p50)}{_tail(best)}, {speed} the baseline's speed{side}"]
    dep = handover.winner(data)
    own = _package_p50(dep, best) if dep is not None else None
    if own is not None:
        words[0] += f" (its package runs at p50 {fmt.ms(own)}: see Deploy)"
    fid = best.fidelity
    facts = fidelity_view.facts(fid, versus=True) if fid is not None else []
    same = (best.declared.arithmetic == "none" if best.declared is not None else best.precision in ("fp32", ""))
    risk = "the same arithmetic as the original" if same else f"computed in {best.precision or 'lower precision'}"
    if facts and fid is not None:
        # A share's phrase carries its own count; a cosine gets the count and the kind of inputs it was read on.
        counted = "samples" in facts[0]
        words.append(f"risk: {risk}, {facts[0]}" + ("" if counted else f" over {fmt.number(fid.samples)} ")
                     + ("" if counted else "generated inputs" if "generated inputs" in fid.decided_by else "samples"))
    found, _ = requirements.checks(data)
    missed = [c for c in found if c.status in (CheckStatus.IMPOSSIBLE, CheckStatus.MISSED)]
    if missed:
        said = [(requirements.name_of(c), c) for c in missed]
        missed_names = " and ".join(f"{name} {requirements.value_text(name, c.target)}{_set_by(c)}" for name, c in said)
        words.append(f"it misses {missed_names}.{_would_meet(data, missed)}")
    elif found:
        unjudged = [requirements.name_of(c) for c in found if not requirements.fully_met(c)]
        defaults = shortlist.targets_are_defaults(data)
        met = "meets every target" + (" (the planner's defaults: you set none)" if defaults else "")
        words.append(met + (f" judged here; not judged: {', '.join(unjudged)}." if unjudged else "."))
    return "; ".join(words[:-1]) + "; " + words[-1] if len(words) > 1 else words[0] + "."
