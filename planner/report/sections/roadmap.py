"""Roadmap: the optimization phases — quick wins, extra impact, architecture redesign — as steps that build on each
other. A step is one kind of change led by its fastest candidate, with the other runtimes for it folded in; it says
where the model lands after it (measured, or a labelled projection), its effort and accuracy risk, and how to apply
and check it. One line per phase names what else was measured there (evidence.md holds every candidate); the
profile's redesign findings are estimates, never landed on. "Where the steps land" closes it."""

from __future__ import annotations

from dataclasses import dataclass

from planner.advice.tree import not_applicable
from planner.report import fmt, handover
from planner.report.data import ReportData
from planner.report.sections.candidates import ordered
from planner.report.sections.findings import impact_text
from planner.report.sections.interaction import baseline_retimed
from planner.results import CandidateResult, energy_view, fidelity_view, names
from planner.results.analysis import Finding, Severity
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
    3: "Architecture changes (a redesign needs retraining, an exact rewrite does not)",
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
    tail = f" ({pair.verdict}: factor {pair.factor:.2f})" if pair.factor is not None and pair.verdict else ""
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
        return f"`{handover.run_command(dep)} --check` on the target (or `{handover.verify_command(dep)}`)"
    check = (f"re-measure it with its `planner bench` line (Appendix › Reproduce, **{names.title(cand)}**)"
             if cand.reproduce else "no reproduce line was recorded for it")
    if cand.status == Status.UNCONFIRMED:
        check = "re-run the plan with `--val-data DIR` before relying on it; " + check
    return check


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


_KINDS = ("none", "exact", "reduced-precision", "approximate", "structural")
"""The kinds of change a step makes, in the order they stack: the runtime first, then exact rewrites, precision,
approximations, redesigns (planner.plugins.Arithmetic)."""

_KIND_WORDS = {"none": "Run it on the fastest runtime and settings", "exact": "Rewrite the model exactly",
               "reduced-precision": "Compute in a lower precision", "approximate": "Compress the model",
               "structural": "Redesign the architecture"}


def _kind(cand: CandidateResult) -> str:
    arithmetic = cand.declared.arithmetic if cand.declared is not None else ""
    if arithmetic == "none" and _transforms_model(cand):
        return "exact"
    if arithmetic in _KINDS:
        return arithmetic
    return "none" if cand.precision in ("fp32", "") else "reduced-precision"


def _stacks(cand: CandidateResult) -> bool:
    """Whether the change is to the model itself, so it stacks on whatever runtime the steps before chose (its
    own measurement ran on its plugin's runtime, so the combination is a projection)."""
    return _transforms_model(cand)


@dataclass(frozen=True)
class Landing:
    """Where the model would be after a step, with the steps before it: p50, speedup, and whether it was measured."""

    p50_ms: float
    speedup: float | None
    measured: bool
    basis: str = ""

    def words(self, energy: str = "") -> str:
        """'lands at p50 143 ms, 1.45x the baseline's speed (measured)' or '... (projection: ...)'; `energy` is the
        measured J/inference phrase to put beside a measured p50."""
        speed = f", {fmt.speedup(self.speedup)} the baseline's speed" if self.speedup is not None else ""
        how = f"{energy.lstrip(', ')}, measured" if energy else "measured"
        how = how if self.measured else f"projection, not measured: {self.basis}"
        return f"lands at p50 {fmt.ms(self.p50_ms)}{speed} ({how})"


@dataclass
class RoadStep:
    """One step of the road: its lead candidate, the alternatives folded into it and where it lands."""

    phase: int
    kind: str
    lead: CandidateResult
    alternatives: list[CandidateResult]
    landing: Landing
    meets: str = ""  # how it first meets the latency target ('' when it does not, or met before it)


def _is_win(data: ReportData, cand: CandidateResult) -> bool:
    return (cand.p50 is not None and (data.speedup_of(cand) or 0) > 1
            and (cand.status in (Status.OK, Status.UNCONFIRMED) or _structural(cand)))


def _latency_target(data: ReportData) -> tuple[float | None, str]:
    reqs = data.run.requirements
    if reqs is None or reqs.latency_ms is None:
        return None, ""
    return float(reqs.latency_ms), str(reqs.latency_percentile)


def _meets(data: ReportData, landing: Landing, lead: CandidateResult) -> str:
    target, pct = _latency_target(data)
    if target is None or landing.p50_ms >= target:
        return ""
    tail = lead.latency_ms.p95_ms if lead.latency_ms is not None and landing.measured else None
    said = f"< {fmt.ms(target)} {pct}"
    if pct != "p50" and tail is None:
        return f"the first step under the latency target ({said}) at p50; its {pct} was not measured"
    if pct != "p50" and tail is not None and tail >= target:
        return ""
    return f"the first step that meets the latency target ({said})" + ("" if landing.measured else ", if it holds")


def road(data: ReportData) -> tuple[list[RoadStep], list[CandidateResult]]:
    """The roadmap's steps in order, and the winning candidates that are no step (slower than where the steps
    before already land). A step is one kind of change in one phase; its fastest candidate leads, the best of
    each other runtime folds in as an alternative."""
    wins = [c for c in ordered(data) if not data.is_reference_cand(c) and _is_win(data, c)]
    groups: dict[tuple[int, str], list[CandidateResult]] = {}
    for cand in sorted(wins, key=lambda c: c.p50 or 0.0):
        groups.setdefault((candidate_phase(data, cand), _kind(cand)), []).append(cand)
    base = data.base_ms
    here = Landing(base, 1.0, True) if base is not None else None
    steps: list[RoadStep] = []
    not_steps: list[CandidateResult] = []
    met = False
    for key in sorted(groups, key=lambda k: (k[0], _KINDS.index(k[1]))):
        group = groups[key]
        # An unconfirmed candidate leads only where nothing confirmed is in its group: check it on your data first.
        confirmed = [c for c in group if c.status != Status.UNCONFIRMED]
        lead = (confirmed or group)[0]
        seen = {family(lead)}
        alternatives = []
        for cand in group:
            if cand is not lead and family(cand) not in seen and (_declared_runtime(cand) or cand.plugin) != (
                    _declared_runtime(lead) or lead.plugin):
                seen.add(family(cand))
                alternatives.append(cand)
        speed = data.speedup_of(lead)
        if here is None or lead.p50 is None:
            continue
        if _stacks(lead) and steps and speed:
            landing = Landing(here.p50_ms / speed, (here.speedup or 1.0) * speed, False,
                              f"its {fmt.speedup(speed)} on {_declared_runtime(lead) or 'its runtime'} applied to "
                              "the step before")
        elif lead.p50 < here.p50_ms:
            landing = Landing(lead.p50, speed, True)
        else:
            not_steps += group
            continue
        step = RoadStep(key[0], key[1], lead, alternatives, landing)
        if not met and lead.status != Status.UNCONFIRMED:
            step.meets = _meets(data, landing, lead)
            met = bool(step.meets)
        steps.append(step)
        here = landing
    return steps, not_steps


def _step_lines(data: ReportData, number: int, step: RoadStep) -> list[str]:
    lead = step.lead
    source = data.run.energy_source
    measured_energy = source is not None and source.available and step.landing.measured
    energy = f", {energy_view.cell_phrase(lead)}" if measured_energy else ""
    head = f"{number}. **{names.title(lead)}** — {_KIND_WORDS[step.kind].lower()}; {step.landing.words(energy)}"
    if lead is data.best_cand:
        head += ", the decision above"
    if lead.status == Status.UNCONFIRMED:
        head += "; check it on your data first (not established on these samples)"
    if step.meets:
        head += f". **This is {step.meets}**"
    lines = [head + "."]
    if step.alternatives:
        lines.append("   - Or: " + "; ".join(
            f"{names.title(c)}, {fmt.speedup(data.speedup_of(c))}"
            + (" (not established on these samples: check it on your data first)"
               if c.status == Status.UNCONFIRMED else "") for c in step.alternatives) + ".")
    lines.append(f"   - Effort: {effort(lead, step.phase)}. Risk: {accuracy_risk(lead)}.")
    together = [t for t in (together_text(data, p) for p in data.run.interactions
                            if p.architecture == lead.label) if t]
    if together:
        lines.append(f"   - Measured together {together[0]}.")
    code = names.apply_code(lead)
    if handover.for_candidate(data, lead) is None and code:
        # No package: the runtime's own calls, to paste into the serving code.
        lines += [f"   - Apply it in the runtime's own API, then check: {_check(data, lead)}.", "",
                  "     ```python", *(f"     {line}" if line else "" for line in code.splitlines()), "     ```", ""]
    else:
        lines.append(f"   - Apply: {_apply(data, lead)}. Check: {_check(data, lead)}.")
    return lines


def _phase_extras(data: ReportData, phase: int, steps: list[RoadStep], not_steps: list[CandidateResult]) -> list[str]:
    """What else the phase measured or planned, named once: slower than the road, not faster than the baseline,
    rejected, did not run, and the plan's steps this run did not measure."""
    measured = [c for c in ordered(data) if not data.is_reference_cand(c) and candidate_phase(data, c) == phase]
    on_road = {id(s.lead) for s in steps} | {id(c) for s in steps for c in s.alternatives}
    timed = [c for c in measured if c.p50 is not None and id(c) not in on_road]
    extras = []
    slower_road = [c for c in timed if c in not_steps]
    if slower_road:
        extras.append("slower than where the steps before land, so no step: " + _named(data, slower_road))
    folded = [c for c in timed if _is_win(data, c) and c not in not_steps]
    if folded:
        extras.append("other settings of the steps above, slower than their lead: " + _named(data, folded))
    slower = [c for c in timed if not _is_win(data, c) and (data.speedup_of(c) or 0) <= 1]
    if slower:
        extras.append("not faster than the baseline: " + _named(data, slower))
    rejected = [c for c in timed if not _is_win(data, c) and c not in slower]
    if rejected:
        extras.append("rejected by the fidelity check: " + _named(data, rejected))
    failed = [c for c in measured if c.p50 is None]
    if failed:
        extras.append("did not run: " + ", ".join(f"{names.title(c)} ({c.status})" for c in failed))
    lines = []
    if extras:
        lines.append("- Also measured (every figure in Appendix › All candidates): " + "; ".join(extras) + ".")
    exact = _exact_findings(data) if phase == 1 else []
    runtime = [f for f in data.sorted_findings if f.category == "runtime" and f.severity != Severity.INFO]
    if phase == 1 and runtime and not steps:
        lines.append("- The profile points to the runtime (estimates): " + "; ".join(
            f"{f.title or f.id} ({impact_text(f)})" for f in runtime) + ".")
    if exact:
        lines.append("- Exact rewrites the profile points to (the same outputs, no retraining; estimates, no gain "
                     "measured here): " + "; ".join(exact) + ".")
    listed = _finding_ids(data)
    unmeasured = [_unmeasured_step(data, s) for s in data.plan_steps
                  if step_phase(s) == phase and s.source not in listed and not step_measured(data, s)
                  and step_applies(data, s)]
    if unmeasured:
        lines.append("- Not measured in this run: " + "; ".join(unmeasured) + ".")
    return lines


def _named(data: ReportData, cands: list[CandidateResult]) -> str:
    return ", ".join(f"{names.title(c)} ({fmt.speedup(data.speedup_of(c))})" for c in cands)


def exact_finding(data: ReportData, finding: Finding) -> bool:
    """Whether acting on the finding is an exact rewrite (padded channels, folded BatchNorm): no retraining, so it
    is no redesign. The finding says so; a file written before findings did is read from the candidates of its
    plan step's plugins, which keep the arithmetic."""
    if finding.exact:
        return True
    plugins = {p for s in data.plan_steps if s.source == f"finding:{finding.id}" for p in step_plugins(s)}
    cands = [c for c in data.run.candidates if c.plugin in plugins]
    return bool(cands) and all(_kind(c) == "exact" for c in cands)


def _exact_findings(data: ReportData) -> list[str]:
    """The findings an exact rewrite answers, in words for Phase 1 (none measured a gain here)."""
    return [f"{f.title or f.id} ({impact_text(f)}): {f.advice.rstrip('.') or 'change the layers it names'}"
            for f in data.sorted_findings if exact_finding(data, f)]


def _finding_lines(data: ReportData, number: int) -> list[str]:
    """The profile's architecture findings: estimates, never landed on; the first MAX_STEPS, the rest named."""
    # Redesigns only: a finding a runtime fixes (overhead) is Phase 1's business, and an informational one (nothing
    # that can change) or one an exact rewrite answers is no redesign.
    findings = [f for f in data.sorted_findings if f.category == "architecture" and f.severity != Severity.INFO
                and not exact_finding(data, f)]
    lines = []
    for i, finding in enumerate(findings[:MAX_STEPS]):
        step = _finding_step(finding)
        lines += step.lines(number + i)
    if findings[MAX_STEPS:]:
        lines.append("- More findings, estimates not measured (Appendix › Architecture findings): "
                     + "; ".join(f"{f.title or f.id} ({impact_text(f)})" for f in findings[MAX_STEPS:]) + ".")
    return lines


def _landings(data: ReportData, steps: list[RoadStep]) -> list[str]:
    """Where the phases together land: each phase's last step, measured or projected, and the target."""
    lines = ["### Where the steps land", ""]
    base = data.base_ms
    if base is not None:
        lines.append(f"- Today: p50 {fmt.ms(base)} (the baseline, measured).")
    for phase in PHASES:
        last = [s for s in steps if s.phase == phase]
        if last:
            lines.append(f"- After Phase {phase}: {last[-1].landing.words()}.")
    target, pct = _latency_target(data)
    if target is not None:
        first = next((s for s in steps if s.meets), None)
        lines.append(f"- Latency target < {fmt.ms(target)} {pct}: "
                     + (f"first reached by **{names.title(first.lead)}**." if first is not None
                        else "no measured step reaches it; the architecture findings are estimates, not "
                             "projected."))
    lines.append("- Steps marked *not measured in this run* are in no number above.")
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Roadmap section: the steps in order, each building on the ones before, then where they land."""
    lines = ["## Roadmap", ""]
    if data.run.baseline is None and not data.run.candidates:
        return lines + [f"Roadmap: {data.missing('profiling the baseline')}.", ""]
    lines += ["*Each step builds on the steps before it and says where the model lands after it; alternatives "
              "for the same step are folded into it. A landing is measured, or labelled a projection.*", ""]
    steps, not_steps = road(data)
    number = 1
    for phase in PHASES:
        heading_at = len(lines)
        lines += [f"### Phase {phase}: {_PHASE_TITLES[phase]}", ""]
        mine = [s for s in steps if s.phase == phase]
        for step in mine:
            lines += _step_lines(data, number, step)
            number += 1
        if phase == 3:
            # A redesign measured only beside a hardware candidate (no candidate row of its own) is a step too.
            labels = {c.label for c in data.run.candidates}
            for pair in data.run.interactions:
                if pair.needs_retraining and pair.architecture not in labels:
                    lines += _interaction_only_step(data, pair).lines(number)
                    number += 1
            found = _finding_lines(data, number)
            number += sum(1 for line in found if line[:1].isdigit())
            lines += found
        extras = _phase_extras(data, phase, steps, not_steps)
        lines += extras
        if len(lines) == heading_at + 2:
            why = "" if data.run.candidates else f" ({data.missing('measuring candidates')})"
            lines.append({1: f"- No quick win was measured in this run{why}.",
                          2: f"- No quantization or compression candidate was planned or ran{why}.",
                          3: "- The architecture lint suggested no change."}[phase])
        lines.append("")
    return lines + _landings(data, steps)
