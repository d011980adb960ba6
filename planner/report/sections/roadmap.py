"""Roadmap: the optimization phases — quick wins, extra impact, architecture redesign — each with at most three
steps in the order to take them. A step gives its measured gain (or a labelled estimate), the effort, the
accuracy risk, how to apply it and how to check it; one line per phase names what else was measured there
(the Appendix holds every candidate). The combined effect closes it."""

from __future__ import annotations

from dataclasses import dataclass

from planner.advice.tree import not_applicable
from planner.report import fmt, handover
from planner.report.data import ReportData
from planner.report.sections.candidates import label, ordered
from planner.report.sections.findings import impact_text
from planner.report.sections.interaction import baseline_retimed
from planner.results import CandidateResult, energy_view, fidelity_view
from planner.results.analysis import Finding
from planner.results.decisions import PlanStep
from planner.results.interaction import Interaction, InteractionCell
from planner.results.values import Status

PHASES = (1, 2, 3)
"""The roadmap phases: quick wins, extra impact, architecture redesign."""

MAX_STEPS = 3
"""The most steps a phase lists; the others are named in one line, and the Appendix holds them all."""

_PHASE_TITLES = {
    1: "Quick wins (no retraining)",
    2: "Extra impact (quantization and compression: check accuracy on your data)",
    3: "Architecture redesign (needs retraining)",
}

# The effort a change takes, by what it does to the model's arithmetic (planner.plugins.Arithmetic).
_EFFORT = {
    "none": "low, a runtime or setting change: the model and its weights stay as they are",
    "exact": "low, an exact rewrite of the model: the same outputs, no retraining",
    "reduced-precision": "medium, it computes in {precision}: confirm accuracy on your data",
    "approximate": "medium to high, an approximation of the model: fine-tune it if accuracy drops",
    "structural": "high, a new architecture: train it, then validate accuracy",
}
_PHASE_EFFORT = {1: "low, a setting or deployment change", 2: "medium, needs calibration or validation data",
                 3: "high, needs retraining"}


def step_phase(step: PlanStep) -> int:
    """The plan's phase for a step (1 where a hand-edited file lacks a valid one)."""
    return step.phase if step.phase in PHASES else 1


def step_plugins(step: PlanStep) -> list[str]:
    """The plugins that measure a plan step ([] for advice)."""
    return [p for p in step.plugins if p]


def candidate_phase(data: ReportData, cand: CandidateResult) -> int:
    """The phase its plugin declared (recorded with the candidate); for a file written before plugins declared
    one, the phase of the plan step its plugin measured, else 1."""
    if cand.declared is not None and cand.declared.phase in PHASES:
        return cand.declared.phase
    phases = [step_phase(s) for s in data.plan_steps if cand.plugin in step_plugins(s)]
    return min(phases) if phases else 1


def _transforms_model(cand: CandidateResult) -> bool:
    return cand.declared is not None and cand.declared.transforms_model


def _structural(cand: CandidateResult) -> bool:
    return cand.declared is not None and cand.declared.arithmetic == "structural"


def _declared_runtime(cand: CandidateResult) -> str:
    """The runtime its plugin declared ('' in a file written before plugins declared one)."""
    return cand.declared.runtime if cand.declared is not None else ""


def family(cand: CandidateResult) -> str:
    """The runtime and precision a candidate deploys (its plugin's declared runtime, else its plugin): settings
    of one family are near-duplicates (thread or shape settings), folded to the fastest in the roadmap. A change
    to the model itself is a family of its own per plugin: a redesign is no other setting of a channel padding."""
    runtime = _declared_runtime(cand) or cand.plugin
    model_change = f" {cand.plugin}" if _transforms_model(cand) else ""
    return f"{runtime} {cand.precision}{model_change}"


def fidelity_facts(cand: CandidateResult) -> str:
    """What the fidelity check measured, in words ('cosine 0.99999, top-1 agreement 100%, over 8 samples')."""
    fid = cand.fidelity
    if fid is None:
        return ""
    # A dense map, a sequence or a regression output is described by its own test, never by top-1 or cosine.
    parts = fidelity_view.facts(fid, versus=True, centered=True)
    parts.append(f"over {fmt.number(fid.samples)} samples")
    return ", ".join(parts)


def accuracy_risk(cand: CandidateResult) -> str:
    """The accuracy risk as the fidelity check against the original measured it."""
    if _structural(cand):
        # New, untrained weights: comparing its outputs with the original's says nothing about accuracy.
        return "unknown until retrained (new weights: speed measured, accuracy not)"
    fid = cand.fidelity
    if fid is None:
        return "not measured (no fidelity check ran)"
    verdict = {Status.OK: "passed the fidelity check", Status.REJECTED: "failed the fidelity check",
               Status.UNCONFIRMED: "not established on real data"}.get(cand.status, "")
    if verdict and cand.status != Status.UNCONFIRMED and "generated inputs" in fid.decided_by:
        verdict += " on generated inputs"
    if cand.status == Status.UNCONFIRMED and fid.cannot_judge:
        verdict += " (the fidelity check cannot judge it here: the original's outputs barely depend on these inputs)"
    return " — ".join(p for p in (fidelity_facts(cand), verdict) if p) or "not recorded"


def effort(cand: CandidateResult, phase: int) -> str:
    """How much work the change is, from what its plugin declared it does to the arithmetic."""
    arithmetic = cand.declared.arithmetic if cand.declared is not None else ""
    if arithmetic == "none" and _transforms_model(cand):
        arithmetic = "exact"
    if arithmetic not in _EFFORT:
        # A file written before plugins declared it: a lower precision tells; otherwise the phase does.
        precision = cand.precision
        arithmetic = "" if precision in ("fp32", "") and phase != 1 else "none" if precision in ("fp32", "") \
            else "reduced-precision"
    if not arithmetic:
        return _PHASE_EFFORT[phase]
    return _EFFORT[arithmetic].format(precision=cand.precision or "a lower precision")


# Where a measured candidate records the setting a plan step's option names: the thread counts its spec
# declares (the plugin contract's words, whatever the runtime calls them), else the torch threads the
# worker found in force. Older files are brought to these fields when read (planner.results.schema).
_SETTING_NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "intra_op_threads": (("spec", "threads"), ("threads", "torch_intra_op_threads")),
    "inter_op_threads": (("spec", "interop_threads"), ("threads", "torch_inter_op_threads")),
}


def _setting(cand: CandidateResult, option: str) -> object:
    # The spec and the threads found in force are plain JSON objects on the candidate: read by name.
    records = {"spec": cand.spec, "threads": cand.threads}
    for part, name in _SETTING_NAMES.get(option, (("spec", option),)):
        value = records[part].get(name)
        if value is not None:
            return value
    return None


def step_measured(data: ReportData, step: PlanStep) -> bool:
    """Whether this run measured the plan step: its plugin recorded a candidate, or a measured candidate of
    any runtime ran with every setting the step names (a thread-count step is measured by an ONNX Runtime
    candidate at that thread count even where the PyTorch plugin could not run)."""
    plugins = step_plugins(step)
    if plugins and any(c.plugin in plugins for c in data.run.candidates):
        return True
    if not step.options:
        return False
    timed = [c for c in data.run.candidates if c.measured]
    return any(all(_setting(c, k) == v for k, v in step.options.items()) for c in timed)


def _model_kind(data: ReportData) -> str:
    """The model's kind ('onnx', 'pytorch'...): the loaded model's record, else the baseline's copy."""
    return data.model_record.kind if data.model_record is not None else ""


def step_applies(data: ReportData, step: PlanStep) -> bool:
    """Whether a plan step applies to this model: a PyTorch setting does not for an ONNX-only model.

    The decision tree rules those out; a results file written before it did may still hold one, and
    it must not become a remaining step or the Summary's next one.
    """
    # The tree reads the model's kind from a baseline's JSON form, the one fact it needs.
    return not not_applicable(step.source, {"model": {"kind": _model_kind(data)}})


def _unmeasured_step(data: ReportData, step: PlanStep) -> str:
    """A plan step this run did not measure: why not, when it applies and what the method expects."""
    what = step.title or "planned step"
    plugins = step_plugins(step)
    reason = "; ".join(r for r in (data.skipped_because(p) for p in plugins) if r)
    if not reason:
        reason = "no candidate of this step ran" if plugins else "advice only: no plugin implements it"
    line = f"{what} ({reason}"
    if step.when:
        line += f"; {step.when}"
    expected = step.expected.rstrip(".")
    prefix = "method expectation, not a measurement: "
    if expected.lower().startswith(prefix):
        line += f"; the method expects, not measured: {expected[len(prefix):]}"
    elif expected:
        labelled = any(w in expected.lower() for w in ("estimate", "not a measurement", "expectation"))
        line += f"; expected: {expected if labelled else 'estimate — ' + expected}"
    return line + ")"


def _finding_ids(data: ReportData) -> set[str]:
    return {f"finding:{f.id}" for f in data.sorted_findings if f.id}


def _combined_cell(pair: Interaction) -> InteractionCell | None:
    cell = pair.cell("combined")
    return cell if cell is not None and cell.p50_ms is not None else None


def _over(data: ReportData, pair: Interaction) -> str:
    """What a pair's speedups are over: older interaction studies timed the baseline again, so theirs are over
    that timing, not the plan's."""
    return ("over the baseline as the interaction step timed it" if baseline_retimed(data, pair)
            else "the baseline's speed")


def together_text(data: ReportData, pair: Interaction) -> str:
    """A pair's measured combined cell in words: 'with X: p50 1.05 ms, 85.2x the baseline's speed (independent:
    factor 0.99)'; '' when the combined cell was not measured."""
    cell = _combined_cell(pair)
    if cell is None:
        return ""
    tail = f" ({pair.verdict}: factor {fmt.number(pair.factor)})" if pair.factor is not None and pair.verdict else ""
    return (f"with {pair.hardware or 'the hardware candidate'}: p50 {fmt.ms(cell.p50_ms)}, "
            f"{fmt.speedup(cell.speedup)} {_over(data, pair)}{tail}")


@dataclass(frozen=True)
class Step:
    """One roadmap step as two Markdown lines: what it gains, costs and risks; then how to apply and check it."""

    title: str
    gain: str
    effort: str
    risk: str
    apply: str
    check: str

    def lines(self, number: int) -> list[str]:
        """The step as a numbered item with its apply-and-check line under it."""
        return [f"{number}. **{self.title}** — {self.gain}. Effort: {self.effort}. Accuracy risk: {self.risk}.",
                f"   - Apply: {self.apply}. Check: {self.check}."]


def _apply(data: ReportData, cand: CandidateResult) -> str:
    dep = handover.for_candidate(data, cand)
    if dep is not None:
        return (f"its package in `{handover.folder(dep)}/`" + (f" ({dep.runtime})" if dep.runtime else "")
                + f", run from the plan's folder with `{handover.run_command(dep)}`")
    # The spec is the plugin's CandidateSpec as JSON: its notes say what the measured change did.
    notes = [str(n) for n in cand.spec.get("notes") or () if n]
    if _transforms_model(cand) and notes:
        return f"change the model as measured: {notes[0].rstrip('.')}"
    runtime = _declared_runtime(cand)
    setting = f" with the settings `{fmt.compact(cand.config)}`" if cand.config else ""
    if runtime:
        return f"run it on {runtime}{setting}"
    # A file written before plugins declared their runtime names only the plugin that measured it.
    if cand.plugin:
        return f"run it as the `{cand.plugin}` plugin measured it{setting}"
    return "its settings are under Appendix › All candidates"


def _check(data: ReportData, cand: CandidateResult) -> str:
    dep = handover.for_candidate(data, cand)
    if dep is not None:
        return f"`{handover.verify_command(dep)}`"
    check = (f"re-measure it with its `planner bench` line (Appendix › Reproduce, **{label(cand)}**)"
             if cand.reproduce else "no reproduce line was recorded for it")
    if cand.status == Status.UNCONFIRMED:
        check = "re-run the plan with `--val-data DIR` before relying on it; " + check
    return check


def _candidate_step(data: ReportData, cand: CandidateResult, phase: int) -> Step:
    # Energy where the plan looked for a counter (a file written before that has none to speak of).
    energy = f", {energy_view.cell_phrase(cand)}" if data.run.energy_source is not None else ""
    gain = f"{fmt.speedup(data.speedup_of(cand))} the baseline's speed (p50 {fmt.ms(cand.p50)}{energy}, measured"
    if cand.dropped:
        gain += " by the quick screen only"
    gain += ")"
    if cand.status == Status.UNCONFIRMED:
        # Possibly a real win: generated inputs cannot tell, so the step is to check it on the user's data.
        gain = "check on your data first: " + gain
    if cand is data.best_cand:
        gain += ", the decision above"
    together = [t for t in (together_text(data, p) for p in data.run.interactions
                            if p.architecture == label(cand)) if t]
    if together:
        gain += "; measured together " + together[0]
    return Step(label(cand), gain, effort(cand, phase), accuracy_risk(cand), _apply(data, cand), _check(data, cand))


def _interaction_only_step(data: ReportData, pair: Interaction) -> Step:
    """A redesign the interaction step measured that has no candidate of its own: its cells are its only
    figures, so they are the ones shown."""
    arch = pair.cell("architecture")
    speedup, p50_ms = (arch.speedup, arch.p50_ms) if arch is not None else (None, None)
    gain = (f"{fmt.speedup(speedup)} {_over(data, pair)} (p50 {fmt.ms(p50_ms)}, measured in the "
            "interaction step)")
    together = together_text(data, pair)
    if together:
        gain += "; measured together " + together
    return Step(pair.architecture or "redesign", gain, _EFFORT["structural"],
                "unknown until retrained (new weights: speed measured, accuracy not)",
                "change the model to the redesigned layout the planner measured",
                "re-run the plan on the changed model")


def _finding_step(finding: Finding) -> Step:
    title = finding.title or finding.id or "finding"
    layers = ", ".join(f"`{x}`" for x in finding.layers)
    advice = finding.advice.rstrip(".") or "change the layers it names"
    return Step(title, f"not measured: {impact_text(finding)}" + (f"; layers {layers}" if layers else ""),
                _PHASE_EFFORT[3], "unknown until retrained and validated", advice,
                "re-run the planner on the changed model to measure it")


@dataclass(frozen=True)
class _Phase:
    steps: list[Step]
    also: list[str]  # what else was measured in the phase, one clause per kind
    unmeasured: list[str]  # plan steps this run did not measure
    more_findings: list[str]  # findings past the phase's steps


def _named(data: ReportData, cands: list[CandidateResult]) -> str:
    return ", ".join(f"{label(c)} ({fmt.speedup(data.speedup_of(c))})" for c in cands)


def _phase(data: ReportData, phase: int) -> _Phase:
    """The phase's steps (measured wins, one per family; in Phase 3 then the findings), capped at MAX_STEPS,
    and everything else the phase measured or planned, named once."""
    measured = [c for c in ordered(data) if not data.is_reference_cand(c) and candidate_phase(data, c) == phase]
    timed = [c for c in measured if c.p50 is not None]
    # A win is faster than the baseline and either passed, waits on real data, or is a redesign (speed only).
    wins = [c for c in timed if (data.speedup_of(c) or 0) > 1
            and (c.status in (Status.OK, Status.UNCONFIRMED) or _structural(c))]
    if phase == 3:
        # Every redesign is speed-only and unranked: the largest measured gain leads.
        wins.sort(key=lambda c: -(data.speedup_of(c) or 0))
    leaders = {family(c): c for c in reversed(wins)}
    shown = [c for c in wins if leaders[family(c)] is c]
    folded = [c for c in wins if c not in shown]
    steps = [_candidate_step(data, c, phase) for c in shown]
    if phase == 3:
        # A redesign measured only beside a hardware candidate (no candidate row of its own) is a step too.
        labels = {label(c) for c in data.run.candidates}
        steps += [_interaction_only_step(data, p) for p in data.run.interactions
                  if p.needs_retraining and p.architecture not in labels]
    findings = data.sorted_findings if phase == 3 else []
    shown_steps = len(steps)
    steps += [_finding_step(f) for f in findings]
    also = []
    beyond = shown[MAX_STEPS:]
    # A faster candidate the fidelity check could not establish is named as such, never as a plain win.
    pending = [c for c in beyond if c.status == Status.UNCONFIRMED]
    if [c for c in beyond if c not in pending]:
        also.append("also faster: " + _named(data, [c for c in beyond if c not in pending]))
    if pending:
        also.append("also faster, but not established on real data (check on your data first): "
                    + _named(data, pending))
    if folded:
        also.append("other settings of the same runtime and precision, slower than the step above them: "
                    + _named(data, folded))
    slower = [c for c in timed if c not in wins and (data.speedup_of(c) or 0) <= 1]
    if slower:
        also.append("not faster than the baseline, so not worth deploying here: " + _named(data, slower))
    rejected = [c for c in timed if c not in wins and c not in slower]
    if rejected:
        also.append("rejected by the fidelity check: " + _named(data, rejected))
    failed = [c for c in measured if c.p50 is None]
    if failed:
        also.append("did not run: " + ", ".join(f"{label(c)} ({c.status})" for c in failed))
    # A plan step made from a finding is listed with the finding itself (Phase 3), not twice.
    listed = _finding_ids(data)
    unmeasured = [_unmeasured_step(data, s) for s in data.plan_steps
                  if step_phase(s) == phase and s.source not in listed and not step_measured(data, s)
                  and step_applies(data, s)]
    more = [f"{f.title or f.id} ({impact_text(f)})" for f in findings[max(0, MAX_STEPS - shown_steps):]]
    return _Phase(steps[:MAX_STEPS], also, unmeasured, more)


def _phase_lines(data: ReportData, number: int) -> list[str]:
    lines = [f"### Phase {number}: {_PHASE_TITLES[number]}", ""]
    part = _phase(data, number)
    for i, step in enumerate(part.steps, 1):
        lines += step.lines(i)
    if part.also:
        lines.append("- Also measured here (every figure under Appendix › All candidates): "
                     + "; ".join(part.also) + ".")
    if part.more_findings:
        lines.append("- More findings, estimates not measured (Appendix › Architecture findings): "
                     + "; ".join(part.more_findings) + ".")
    if part.unmeasured:
        lines.append("- Not measured in this run: " + "; ".join(part.unmeasured) + ".")
    if len(lines) == 2:
        why = "" if data.run.candidates else f" ({data.missing('measuring candidates')})"
        lines.append({1: f"- No quick win was measured in this run{why}.",
                      2: "- Not measured in this run: no calibration, quantization or compression candidate was "
                         f"planned or ran{why}.",
                      3: "- The architecture lint suggested no change."}[number])
    return lines + [""]


def _combined(data: ReportData) -> list[str]:
    lines = ["### Combined effect", ""]
    best = data.best_cand
    base = data.base_ms
    if best is not None and not data.is_reference_cand(best):
        lines.append(f"- Measured: **{label(best)}** alone runs at p50 {fmt.ms(best.p50)} against "
                     f"{fmt.ms(base)} for the baseline, {fmt.speedup(data.speedup_of(best))} the baseline's speed.")
        start_label = label(best)
    else:
        others = [c for c in data.run.candidates if not data.is_reference_cand(c)]
        lines.append(("- Measured: no candidate beat the baseline in this run" if others else
                      f"- Measured: no optimized candidate ({data.missing('measuring candidates')})")
                     + (f"; baseline p50 {fmt.ms(base)}." if base is not None else "."))
        start_label = "the baseline"
    together = [(p, cell) for p in data.run.interactions if (cell := _combined_cell(p)) is not None]
    if together:
        # The pair that gained most together; the Appendix's interaction section has every pair.
        pair, _ = max(together, key=lambda pc: pc[1].speedup or 0.0)
        retrain = " (speed only: accuracy unknown until retrained)" if pair.needs_retraining else ""
        lines.append(f"- Measured together in the interaction step: **{pair.architecture}**{retrain} "
                     f"{together_text(data, pair)}.")
    findings = data.sorted_findings
    redesign_measured = any(p.needs_retraining for p, _ in together)
    if findings and not redesign_measured and (best is not None or base is not None):
        # No p50 is projected from a finding: its impact is a share of FLOPs, time or memory the
        # pattern touches, not a saving, and optimizations interact.
        title = findings[0].title or findings[0].id
        lines.append(f"- Estimate: the largest architectural lever is *{title}* "
                     f"({impact_text(findings[0])}). Its effect on {start_label} is not projected: "
                     "re-run the planner on the redesigned model to measure it.")
    lines.append("- Steps marked *not measured in this run* are not included in any number above.")
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Roadmap section."""
    lines = ["## Roadmap", ""]
    if data.run.baseline is None and not data.run.candidates:
        return lines + [f"Roadmap: {data.missing('profiling the baseline')}.", ""]
    lines += ["*The steps to take, in order, at most three per phase, each with its measured gain, effort and "
              "accuracy risk; near-duplicate settings fold into their best.*", ""]
    for number in PHASES:
        lines += _phase_lines(data, number)
    return lines + _combined(data)
