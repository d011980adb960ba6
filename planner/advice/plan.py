"""The Plan: ordered steps (plugin or advice, why, expected effect) from the decision tree and profile findings."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from planner import units
from planner.advice import _facts as facts
from planner.advice.checklist import (
    Answer,
    AnswerStatus,
    answer_checklist,
    assess_threads,
    group_for,
)
from planner.advice.requirements import (
    CheckStatus,
    RequirementCheck,
    Requirements,
    all_met,
    evaluate,
)
from planner.advice.tree import (
    DecisionPath,
    RecommendedAction,
    evaluate_tree,
)
from planner.plugins.declarations import ActionId, Arithmetic, Catalog
from planner.results.decisions import (  # below advice so results can hold them
    PLAN_SCHEMA,
    PlanRecord,
    PlanStep,
    StepKind,
)

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

SCHEMA_VERSION = PLAN_SCHEMA  # the plan object's own `schema`
# Architecture findings become Phase 3 advice; more than a few would bury the plan.
MAX_FINDINGS = 3
RETRAINING_PHASE = 3

_SEVERITY_RANK = {"critical": 0, "high": 1, "warning": 2, "medium": 2, "low": 3, "info": 4}


@dataclass(frozen=True)
class Plan:
    """The plan for one target: steps in order, whether the baseline already meets the requirements, and why."""

    target: str
    steps: tuple[PlanStep, ...]
    requirements_met: bool | None
    summary: str
    notes: tuple[str, ...]
    checks: tuple[RequirementCheck, ...] = ()
    requirements: Requirements | None = None
    answers: tuple[Answer, ...] = ()
    path: DecisionPath | None = None

    @property
    def plugins(self) -> tuple[str, ...]:
        """The plugins the plan measures, in step order, without repeats."""
        return tuple(dict.fromkeys(name for s in self.steps for name in s.plugins))

    def record(self) -> PlanRecord:
        """This plan as results hold it: its `schema`, and its answers and walk as their records, named
        `checklist` and `decision_path`."""
        return PlanRecord(schema=SCHEMA_VERSION, target=self.target, requirements_met=self.requirements_met,
                          summary=self.summary, steps=tuple(self.steps), notes=tuple(self.notes),
                          checks=tuple(self.checks), requirements=self.requirements,
                          checklist=tuple(a.record() for a in self.answers),
                          decision_path=self.path.record() if self.path else None)



def _gate_text(requirements: Requirements) -> str:
    if requirements.accuracy_budget is not None:
        budget = units.accuracy(requirements.accuracy_budget)
        return (f"Kept only if accuracy drops by at most {budget} and its outputs agree with the original's; "
                "validate accuracy before deploying.")
    return "Kept only if its outputs agree with the original's; validate accuracy before deploying."


def _from_action(rec: RecommendedAction, requirements: Requirements) -> PlanStep:
    action = rec.action
    expected = f"Method expectation, not a measurement: {action.expected}."
    if rec.fidelity_gated:
        expected += " " + _gate_text(requirements)
    why = f"{rec.node_text}: {rec.evidence}" if rec.evidence else rec.node_text
    return PlanStep(order=0, plugins=rec.plugins, title=rec.title, why=why, expected=expected,
                    fidelity_gated=rec.fidelity_gated, kind=StepKind.MEASURE if rec.plugins else StepKind.ADVICE,
                    phase=action.phase, when=rec.when, options=MappingProxyType(dict(rec.options)),
                    source=rec.node_id)


def _finding_key(finding: Mapping[str, Any]) -> tuple[int, float, int]:
    impact = facts.number(finding.get("impact"))
    severity = _SEVERITY_RANK.get(str(finding.get("severity", "")).lower(), len(_SEVERITY_RANK))
    return (0 if impact is not None else 1, -(impact or 0.0), severity)


def _architecture_findings(baseline: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The profile's architecture findings, largest impact first (numeric impact, then severity)."""
    raw = baseline.get("findings") if isinstance(baseline, Mapping) else None
    findings = [f for f in raw or () if isinstance(f, Mapping) and f.get("title")]
    # A finding that labels itself as something other than architecture is not Phase 3 work.
    findings = [f for f in findings if str(f.get("category", "architecture")) == "architecture"]
    return sorted(findings, key=_finding_key)


def _from_finding(finding: Mapping[str, Any], catalog: Catalog, target: str = "") -> PlanStep:
    impact = finding.get("impact")
    impact_text = f"; impact {impact}" if impact not in (None, "") else ""
    basis = f" ({finding['impact_basis']})" if finding.get("impact_basis") else ""
    layers = finding.get("layers") or ()
    where = f" in {', '.join(str(x) for x in layers[:3])}" if layers else ""
    why = (f"profile finding {finding.get('id', '?')} ({finding.get('severity', 'unrated')}){where}: "
           f"{finding.get('evidence', '')}{impact_text}{basis}").rstrip(": ")
    # The profile wrote its advice for the hardware it ran on; a plan for another target takes that target's.
    by_target = finding.get("advice_by_target")
    chosen = by_target.get(target) if isinstance(by_target, Mapping) else None
    advice = str(chosen or finding.get("advice") or "").rstrip(".")
    plugins = _finding_plugins(finding, catalog, target)
    expected = ("From the profile's analysis, not a measurement: " + (advice + ". " if advice else "")
                + ("" if _exact(finding, catalog, target)
                   else "Phase 3: needs retraining, and accuracy must be re-measured afterwards."))
    notes = [d.plan_note for d in (catalog.get(p) for p in plugins) if d is not None and d.plan_note]
    if notes:
        expected += " " + " ".join(dict.fromkeys(notes))
    return PlanStep(order=0, plugins=plugins, title=str(finding["title"]), why=why, expected=expected,
                    fidelity_gated=False, kind=StepKind.MEASURE if plugins else StepKind.ADVICE,
                    phase=RETRAINING_PHASE, source=f"finding:{finding.get('id', '?')}")


# The action that answers a profile finding; the plugins declaring it measure it (the rest stay advice).
FINDING_ACTIONS: Mapping[str, str] = MappingProxyType({
    "channel-alignment": ActionId.ALIGN_CHANNELS,
    "unfused-conv-bn": ActionId.FOLD_NORMS,
    "dense-classifier": ActionId.FACTOR_DENSE,
    "large-kernels": ActionId.SMALLER_ARCHITECTURE,
    "late-downsampling": ActionId.SMALLER_ARCHITECTURE,
    "input-upsampling": ActionId.SMALLER_ARCHITECTURE,
})


def _finding_plugins(finding: Mapping[str, Any], catalog: Catalog, target: str) -> tuple[str, ...]:
    action = FINDING_ACTIONS.get(str(finding.get("id", "")))
    return catalog.serving(action, target) if action else ()


def _all_exact(plugins: Sequence[str], catalog: Catalog) -> bool:
    """Whether every plugin computes the same function (no retraining): cheap enough to plan for every finding."""
    found = [catalog.get(p) for p in plugins]
    return bool(found) and all(d is not None and d.arithmetic is Arithmetic.NONE for d in found)


def _exact(finding: Mapping[str, Any], catalog: Catalog, target: str) -> bool:
    """Whether acting on the finding is an exact rewrite (the same outputs, no retraining): the finding says so,
    or every plugin that measures its action computes the same function."""
    return finding.get("exact") is True or _all_exact(_finding_plugins(finding, catalog, target), catalog)


def _left_out_note(left_out: Sequence[Mapping[str, Any]], catalog: Catalog, target: str) -> str:
    """The architecture findings a plan whose requirements are met leaves out, and what acting on them takes."""
    exact = sum(1 for f in left_out if _exact(f, catalog, target))
    retrain = len(left_out) - exact
    lead = f"{len(left_out)} architecture finding(s) from the profile are not planned: the requirements are met"
    if not exact:
        return f"{lead}, and they need retraining."
    rewrites = (f"{exact} {'is an exact rewrite' if exact == 1 else 'are exact rewrites'} (the same outputs, no "
                "retraining) that a missed requirement would plan")
    return f"{lead}; {retrain} need retraining, {rewrites}." if retrain else f"{lead}; {rewrites}."


def _arithmetic_at_most(step: PlanStep, catalog: Catalog, allowed: Sequence[Arithmetic]) -> bool:
    """Whether every plugin of the step declares one of the `allowed` changes to the arithmetic."""
    found = [catalog.get(p) for p in step.plugins]
    return all(d is not None and d.arithmetic in allowed for d in found)


def _is_quick_check(step: PlanStep) -> bool:
    """A measured step that changes no precision, needs no retraining and has no precondition."""
    return step.kind == StepKind.MEASURE and not step.fidelity_gated and not step.when and step.phase == 1


def _is_runtime_switch(step: PlanStep, catalog: Catalog) -> bool:
    """A cheap runtime switch (threads, layout, ONNX Runtime, OpenVINO): measured even when defaults are met.

    A step whose plugins keep the arithmetic is a switch even when it is fidelity-gated for an extra
    reduced-precision candidate beside the fp32 ones (bf16 where the CPU computes it natively)."""
    return (step.kind == StepKind.MEASURE and not step.when and step.phase == 1
            and (not step.fidelity_gated or _arithmetic_at_most(step, catalog, (Arithmetic.NONE,))))


def _is_post_training_precision(step: PlanStep, catalog: Catalog) -> bool:
    """A measured precision step that needs no retraining (post-training INT8): gated on fidelity, so it is
    safe to measure when only the planner's defaults are met."""
    return (step.kind == StepKind.MEASURE and step.fidelity_gated and step.phase <= 2
            and _arithmetic_at_most(step, catalog, (Arithmetic.NONE, Arithmetic.REDUCED_PRECISION)))


def _check_plugins(steps: Sequence[PlanStep], target: str, catalog: Catalog) -> None:
    """An invariant: a plan never names a plugin for the wrong hardware."""
    wrong = [name for s in steps for name in s.plugins
             if (found := catalog.get(name)) is not None and not found.runs_on(target)]
    if wrong:
        raise ValueError(f"{target} plan names {', '.join(wrong)}: the {target} tree must not plan them")


def _what_more_buys(baseline: Mapping[str, Any], requirements: Requirements) -> str:
    best = facts.best_point(facts.sweep(baseline), max_latency_ms=requirements.latency_ms)
    cost = (f"a lower cost per request (more than the measured {units.rate(best.samples_per_s)} at batch "
            f"{best.batch} per machine) and " if best is not None else "")
    return f"{cost}headroom for traffic spikes and slower inputs - not a pass, since nothing is missed"


def _check_text(check: RequirementCheck) -> str:
    return f"{check.name.replace('_', ' ')}: {check.margin}"


def _summary(met: bool | None, checks: Sequence[RequirementCheck], steps: Sequence[PlanStep],
             baseline: Mapping[str, Any], requirements: Requirements) -> str:
    impossible = [c for c in checks if c.status == CheckStatus.IMPOSSIBLE]
    lead = ("Cannot be met as specified: " + "; ".join(_check_text(c) for c in impossible) + ". "
            if impossible else "")
    # A latency met only on the median is named as such beside "met", never left to read as met at its percentile.
    on_median = [c.name.replace("_", " ") for c in checks if c.status == CheckStatus.MET_AT_P50]
    only = f" ({' and '.join(on_median)} judged on p50 only: its percentile was not measured)" if on_median else ""
    if met is True and not requirements.stated:
        return (f"The planner's default requirements are already met{only}: "
                f"{'; '.join(_check_text(c) for c in checks)}. "
                "You stated none, so defaults do not cut the search: "
                f"{len(steps)} steps are still measured, the runtime switches (threads, ONNX Runtime, OpenVINO) "
                "and post-training INT8, which the fidelity check guards. Retraining (pruning, a new "
                "architecture) is left out (don't over-optimize); state your own requirements "
                "(--latency-ms, --min-throughput, ...) or name the plugins (--plugins) to measure it.")
    if met is True and not requirements.speed_stated:
        return (f"Requirements already met{only}: {'; '.join(_check_text(c) for c in checks)}. "
                "You set no latency or throughput target, so what you may lose bounds the candidates and the "
                f"search goes on for the fastest within it: {len(steps)} steps are measured, the runtime switches "
                "(threads, ONNX Runtime, OpenVINO) and post-training INT8, which the fidelity check guards. "
                "Retraining (pruning, a new architecture) is left out; set --latency-ms or --min-throughput to say "
                "how fast is fast enough.")
    if met is True:
        return (f"Requirements already met{only}: {'; '.join(_check_text(c) for c in checks)}. "
                "Further optimization is optional (don't over-optimize). "
                f"What more work would buy: {_what_more_buys(baseline, requirements)}. "
                f"{len(steps)} quick measured checks are listed as optional; precision lowering and "
                "retraining are left out.")
    first = f", starting with {steps[0].title}" if steps else ""
    count = f"Plan: {len(steps)} steps{first}; steps with a 'when' apply only if the earlier ones fall short."
    if met is False:
        missed = [c for c in checks if c.met is False and c.status != CheckStatus.IMPOSSIBLE]
        text = "; ".join(_check_text(c) for c in missed)
        return f"{lead}{'Requirements missed: ' + text + '. ' if text else ''}{count}"
    open_checks = [c for c in checks if c.met is None]
    reasons = "; ".join(_check_text(c) for c in open_checks) or "no requirements are set"
    return f"{lead}Requirements not fully judged from the baseline ({reasons}). The method applies in full. {count}"


def _notes(target: str, hw: HardwareProfile, baseline: Mapping[str, Any], requirements: Requirements,
           answers: Sequence[Answer], left_out: Sequence[Mapping[str, Any]], met: bool | None,
           catalog: Catalog) -> list[str]:
    notes = ["Expected effects are the method's expectations (typical published figures), not measurements: "
             "the planner measures each plugin step on this machine."]
    if target == "nvidia" and facts.first_gpu(hw) is None:
        notes.append("No NVIDIA GPU was detected here: the nvidia steps cannot be measured on this machine "
                     "(plan them on the GPU host, or choose --target cpu).")
    if target in ("cpu", "edge"):
        threads = assess_threads(hw, baseline)
        if threads.ok is False:
            notes.append("Threading (too many threads oversubscribe the cores): " + "; ".join(threads.issues) + ".")
    if requirements.latency_ms is None:
        notes.append("No latency target is set, so no batch size can be chosen safely (a bigger batch adds latency): "
                     "set latency_ms.")
    if facts.latency_unstable(baseline):
        notes.append("The baseline latency was flagged unstable: compare steps against it with care.")
    for answer in answers:
        if answer.id == "edge.latency" and answer.status == AnswerStatus.NOT_MEASURED:
            notes.append(f"{answer.answer}: profile on the target device itself; the numbers here come "
                         "from a development machine.")
    open_questions = [a.question.text for a in answers if a.status == AnswerStatus.ASK_USER]
    if open_questions:
        notes.append(f"{len(open_questions)} checklist question(s) need you: " + " / ".join(open_questions))
    if left_out and met is True:
        notes.append(_left_out_note(left_out, catalog, target))
    elif left_out:
        notes.append(f"{len(left_out)} more architecture finding(s) in the profile are not planned: "
                     f"only the top {MAX_FINDINGS} by impact, and every exact rewrite, are.")
    return notes


def make_plan(*, target: str, hw: HardwareProfile, baseline: Mapping[str, Any], requirements: Requirements,
              answers: Sequence[Answer] | None = None, catalog: Catalog) -> Plan:
    """Build the plan for a target from the hardware, the baseline profile dict and the requirements.

    `answers` are the checklist answers (computed here when None), including any user replies.
    `catalog` holds the plugins' declarations (planner.plugins.catalog()): a step is measured by the
    plugins that declare its action.
    """
    target = str(target)
    group_for(target)  # rejects an unknown target with the accepted names
    baseline = baseline or {}
    if answers is None:
        answers = answer_checklist(target, hw, baseline, requirements=requirements)
    answers = tuple(answers)
    path = evaluate_tree(target, hw, baseline, requirements, answers, catalog=catalog)
    checks = tuple(evaluate(requirements, baseline))
    met = all_met(checks)

    drafts = [_from_action(rec, requirements) for rec in path.actions]
    findings = _architecture_findings(baseline)
    if met is True:
        # Defaults the user never stated must not cut the search short: the cheap runtime switches and post-training
        # precisions are measured anyway. Only a latency or throughput target the user set and the baseline meets
        # says fast enough; a user who states only what they may lose (accuracy, memory) wants the fastest within it.
        keep = (_is_quick_check if requirements.speed_stated
                else lambda step: _is_runtime_switch(step, catalog) or _is_post_training_precision(step, catalog))
        drafts = [replace(step, optional=True) for step in drafts if keep(step)]
        left_out = findings
    else:
        # An exact rewrite needs no retraining and costs one measurement: planned whatever its rank.
        planned = findings[:MAX_FINDINGS] + [f for f in findings[MAX_FINDINGS:] if _exact(f, catalog, target)]
        drafts += [_from_finding(f, catalog, target) for f in planned]
        left_out = [f for f in findings if not any(f is p for p in planned)]
    steps = tuple(replace(step, order=i) for i, step in enumerate(drafts, start=1))
    _check_plugins(steps, target, catalog)
    return Plan(target=target, steps=steps, requirements_met=met,
                summary=_summary(met, checks, steps, baseline, requirements),
                notes=tuple(_notes(target, hw, baseline, requirements, answers, left_out, met, catalog)),
                checks=checks, requirements=requirements, answers=answers, path=path)
