"""The candidates step: build specs from the chosen plugins, measure each in a worker, gate on
fidelity. One plugin's failure is recorded and the rest go on."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from planner import units
from planner.events import CancelToken, Event, EventSink
from planner.pipeline.budget import Budget
from planner.pipeline.search import (
    DROPPED_REACH,
    TYPICAL_SCREEN_S,
    Search,
    can_rank,
    dropped_within_reach,
    screen_order,
)
from planner.plugins.declarations import Arithmetic, candidate_arithmetic
from planner.plugins.options import PluginOptions
from planner.results import Baseline, CandidateResult, Status, Validation, to_data
from planner.results import names as plain
from planner.results.roof_share import candidate_roof_share
from planner.results.values import REPRODUCE_TOLERANCE, Confirmation, Declared, Fidelity, Prediction, ThroughputPoint

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.profile import HardwareProfile
    from planner.measure.interleave import InterleavedOutcome
    from planner.models.loaded import LoadedModel
    from planner.plugins import CandidateSpec, PlanContext, Plugin
    from planner.plugins.registry import PluginIssue


MIN_WORKER_TIMEOUT_S = 5.0
"""The shortest time a worker is given when the budget is nearly spent: its start and load alone take seconds."""

CONFIRM_ALLOWANCE_S = 12.0
"""The seconds of timed turns a quick plan's confirmation may take, every leader and every round together
(the workers' start-up is not counted: it does not depend on how long the leaders are timed).

The question is which leader is fastest, so the turns stop once they are told apart
(planner.measure.interleave.told_apart), and at this allowance when they are not. Timing each leader to a 2%
interval (or its 10 s cap) instead left demo:inefficient's three leaders at 37-48 s of wall time each, screen
included, on a 2-vCPU Intel Xeon (issue 34): the time to a 2% interval grows with the model's latency and the
machine's noise. 12 s gives each of three leaders 4 s of turns: about eight 0.4 s blocks of a 65 ms leader
(demo:inefficient's on an idle 2-core AMD EPYC), or ten samples of a 300 ms one with their re-warms."""

CONFIRM_START_S = 4.0
"""What starting the leaders' workers is budgeted at under --budget (they start together): a spawn, the
runtime's import and load and the first warm-up; 3.8-5.4 s for demo:inefficient's three leaders on a busy
2-core AMD EPYC (load average 2.5-3.5)."""

CONFIRM_LEADER_MIN_S = 2.0
"""The least allowance worth timing one more leader with: the full method's min_time_s (1 s) of timed calls,
with the re-warm before each turn. With less, fewer leaders are confirmed (the first ones in rank order)."""

CONFIRM_WARMUP_CAP_S = 2.0
"""The longest a confirming worker's first warm-up runs (the full method's 10 calls, 0.2 s at least): the
screen's own cap (MeasureSettings.quick), so a slow leader's warm-up does not take the full method's 10 s.
Each turn re-warms besides (planner.measure.interleave.REWARM_S)."""

# How many of a quick run's leaders are measured again with the full method before ranking (the default).
CONFIRM_TOP = 3

NOT_ESTABLISHED = "not established on real data"
"""How an unconfirmed candidate's reason begins: it drifted from the original on generated inputs only."""


class ResultsSink(Protocol):
    """Where the candidates step records what it measured (the plan session)."""

    def add_candidate(self, result: CandidateResult) -> None:
        """Record one candidate's result."""

    def warn(self, message: str) -> None:
        """Record a warning."""

    def skip_plugin(self, plugin: str, reasons: list[str]) -> None:
        """Record a plugin that cannot run here."""

    def set_validation(self, validation: Validation, *, baseline_accuracy: float | None) -> None:
        """Record the validation data the candidates were measured on."""

    def stopped_before(self, names: list[str]) -> None:
        """Record what a cancel stopped the run before: candidates' labels, and plugins whose candidates were not
        built."""


@dataclass
class CandidateRun:
    """One optimize step: the inputs it needs, and the sink its results go to."""

    hw: HardwareProfile
    model: LoadedModel
    baseline: Baseline
    reference: list[np.ndarray]
    workdir: Path
    quick: bool
    val_data: Path | None
    accuracy_budget: float | None
    on_event: EventSink
    cancel: CancelToken
    sink: ResultsSink
    val_data_basis: str = "--val-data"
    plugin_options: PluginOptions = dataclasses.field(default_factory=PluginOptions)  # every plugin's ctx.options
    confirm_top: int = CONFIRM_TOP  # how many leaders confirm() measures again
    confirm_allowance_s: float = CONFIRM_ALLOWANCE_S  # the timed turns every confirm() round shares
    _confirm_tried: set[int] = dataclasses.field(default_factory=set, init=False, repr=False)
    _confirm_spent_s: float = dataclasses.field(default=0.0, init=False, repr=False)  # turns timed so far
    _plugins: dict[str, Plugin] = dataclasses.field(default_factory=dict, init=False, repr=False)
    _issues: list[PluginIssue] = dataclasses.field(default_factory=list, init=False, repr=False)
    streams: bool = False  # parallel streams even in a quick run (the user stated a minimum throughput)
    budget: Budget = dataclasses.field(default_factory=Budget)  # the plan's time budget (no cap by default)

    def run(self, names: list[str], *, timeout_s: float) -> None:
        """Build the named plugins' candidates, then measure and gate each one.

        Under a budget, where the fidelity check cannot judge a change of arithmetic (random weights and no
        labelled data), the costly builds of candidates that cannot end ranked wait until the others are
        screened: their calibration would otherwise spend the time the ones that can win need.
        """
        from planner.models.valdata import labels_of

        labels = labels_of(self.val_data, inputs=self.model.inputs)
        judgeable = self._outputs_judgeable(labels)
        ctx = self._context()
        first, later = self._build_phases(names, judgeable)
        specs = self._build(first, ctx, then=later)
        if specs is None:
            return
        if self.val_data is not None:
            self._record_validation(labels)
        drift = self._baseline_drift()
        if drift:
            message = (f"the original model answered the same input differently on a second call (relative change "
                       f"{drift:.2g}): it keeps state between calls or draws random numbers, so candidates' speed is "
                       "measured but their fidelity cannot be checked against it; reset its state between calls (or "
                       "export it without state) to have fidelity checked")
            self.sink.warn(message)
            self.on_event(Event("warning", message))
        search = Search(self.budget, quick=self.quick)
        search.consider(self.baseline.as_candidate())
        if not self._screen(specs, labels, search, judgeable=judgeable, timeout_s=timeout_s, then=later) or not later:
            return
        specs = self._build(later, ctx)  # the same context: the first phase's ONNX export is reused
        if specs is not None:
            self._screen(specs, labels, search, judgeable=judgeable, timeout_s=timeout_s)

    def _build_phases(self, names: list[str], judgeable: bool) -> tuple[list[str], list[str]]:
        """(the plugins built first, those built after the first ones are screened): see `run`."""
        if not self.budget.capped or judgeable:
            return names, []

        def waits(name: str) -> bool:
            plugin = self._plugins.get(name)
            if plugin is None or not plugin.build_cost_s:
                return False
            return not can_rank(self.declared_by(plugin, str(plugin.build_precision)), outputs_judgeable=False)

        return [n for n in names if not waits(n)], [n for n in names if waits(n)]

    def _screen(self, specs: list[CandidateSpec], labels: list[np.ndarray] | None, search: Search, *,
                judgeable: bool, timeout_s: float, then: Sequence[str] = ()) -> bool:
        """Predict, order and measure (or skip, with the reason) each spec; False when cancelled (the specs left, and
        the plugins `then` to build after them, are recorded as not reached)."""
        specs, predictions = self._predict(specs)
        if self.quick or self.budget.capped:
            specs = screen_order(specs, lambda s: _promise(predictions[id(s)]),
                                 lambda s: self.declared(s.plugin, str(s.precision)), outputs_judgeable=judgeable)
        done = len(search.screened) - 1  # the baseline is in the search; earlier phases' candidates count on
        total = done + len(specs)
        for i, spec in enumerate(specs):
            if self.cancel.cancelled:
                self._stop_before(specs[i:], then)
                return False
            prediction = predictions[id(spec)]
            declared = self.described(spec)
            skip = ""
            if self.quick and prediction.high is not None and prediction.high < 1.0:
                # A quick run spends its minutes where a win is possible; the row still says why it is missing.
                skip = f"not measured in a quick run: predicted to lose ({prediction.band()}: {prediction.basis})"
            skip = (skip or search.variant_skip(spec, declared) or search.prediction_skip(declared, prediction)
                    or self._budget_skip(search, specs[i:]))
            if skip:
                result = CandidateResult(plugin=spec.plugin, label=spec.label, config=spec.config,
                                         precision=str(spec.precision), status=Status.SKIPPED, spec=to_data(spec),
                                         reason=skip)
            else:
                self.on_event(Event("candidate", f"measuring {spec.label}", stage="measure", index=done + i,
                                    total=total, data={"plugin": spec.plugin}))
                result = self._measure(spec, labels, timeout_s=self._timeout(timeout_s), drop_above_ms=search.bound())
                result = dataclasses.replace(result, dropped=search.dropped_reason(result))
            result = dataclasses.replace(result, prediction=prediction, declared=declared)
            search.consider(result)
            self.sink.add_candidate(result)
            self.on_event(Event("candidate_done", candidate_line(result), stage="measure", index=done + i + 1,
                                total=total, data=to_data(result)))
        return True

    def _timeout(self, timeout_s: float) -> float:
        """A candidate's worker timeout: the per-candidate limit, or less when the budget has less left."""
        left = self.budget.left()
        return max(min(timeout_s, left), MIN_WORKER_TIMEOUT_S) if left != float("inf") else timeout_s

    def _budget_skip(self, search: Search, rest: Sequence[CandidateSpec]) -> str:
        """Why the next candidate is not measured when the budget cannot afford it ('' when it can).

        One whose plugin declares extra preparation (`screen_extra_s`: a compile) that the budget cannot afford
        is skipped alone, with its reason. Otherwise the cut is recorded once, naming every candidate left:
        they come last in the screen's order.
        """
        reserve = self._confirm_reserve_s()
        plugin = self._plugins.get(rest[0].plugin) if rest else None
        extra = plugin.screen_extra_s(rest[0]) if plugin is not None else 0.0
        if self.budget.affords(search.typical_s() + extra + reserve):
            return ""
        if extra and self.budget.affords(search.typical_s() + reserve):
            cut = self.budget.cut_step(f"{self.spec_title(rest[0])} not screened",
                                       f"it prepares for about {extra:.0f} s before its first call (a compile) "
                                       f"beyond a {search.typical_s():.0f} s screen, and {self.budget.out_of_time()}")
            self.on_event(self.budget.event(cut))
            return f"not measured: {cut.partition(': ')[2]}"
        if not search.budget_cut:
            left = ", ".join(self.spec_title(s) for s in rest)
            kept = f", with {reserve:.0f} s kept to confirm the leaders" if reserve else ""
            search.budget_cut = self.budget.cut_step(
                f"{len(rest)} candidate{'s' if len(rest) != 1 else ''} not screened ({left})",
                f"{self.budget.out_of_time()}, and one takes about {search.typical_s():.0f} s{kept}; they came last "
                "in the screen's order (what can end ranked first, each runtime's most promising setting before "
                "its others)")
            self.on_event(self.budget.event(search.budget_cut))
        return f"not measured: the time budget ran out ({self.budget.out_of_time()})"

    def _confirm_reserve_s(self) -> float:
        """What a budgeted quick screen keeps for confirming its leaders: their workers' start and two leaders'
        least worthwhile turns (0 when nothing is confirmed)."""
        if not (self.quick and self.confirm_top > 0 and self.budget.capped):
            return 0.0
        return CONFIRM_START_S + min(self.confirm_top, 2) * CONFIRM_LEADER_MIN_S

    def confirm(self, candidates: Sequence[CandidateResult], order: Sequence[int], *,
                timeout_s: float) -> dict[int, CandidateResult]:
        """A quick run's leaders timed again with the full method's settings, interleaved; {index: confirmed result}.

        A 2-second screen can misorder leaders that are close or were timed while the machine was
        busy. The top few (not the baseline) are opened once each in their own worker and timed in
        turns (A B C, C B A, ...), so a change in the machine's load falls on all of them alike, until
        they are told apart (the fastest median's 95% interval wholly below the others') or the plan's
        confirmation allowance (`confirm_allowance_s` of turns) is spent; each result's `stopped_by`
        says which. The allowance is the whole plan's: calling this again after re-ranking confirms
        only the newcomers (a leader already confirmed, or tried, is not timed again), within what the
        earlier rounds left, and confirms none once too little is left. Each keeps the screen's figure
        beside the full one and says whether they agreed within 10%; its fidelity is the screen's (the
        outputs do not depend on timing).

        Besides the top few, a candidate the screen dropped as clearly slower whose screened median lies within
        DROPPED_REACH of the best is timed again with them (planner.pipeline.search.dropped_within_reach): a burst
        of load during its screen must not decide its place. Its confirmation says it was revisited.

        The baseline takes its turns with the leaders, where the allowance has room for it and its worker fits in
        memory beside theirs (`_baseline_joins`), so each confirmed leader's speedup is the ratio of two medians
        timed side by side under one load, recorded in its confirmation (`baseline_p50_ms`). The baseline's own
        record stays the profile's: its figure, sweep and analysis are one measurement, which the report's
        Baseline section reads; the table's other rows keep their speedups over it. An invalid baseline (its
        profile disagreed with itself) gets no speedups worked out over that figure, but its re-time in the
        turns is a measurement of its own: the leaders' side-by-side speedups stand, and their note says so.
        """
        from planner.codec import from_data
        from planner.measure import MeasureSettings
        from planner.measure.evaluate import MeasureJob
        from planner.measure.interleave import InterleaveStop, time_interleaved
        from planner.plugins import CandidateSpec, ModelRef

        top = [i for i in order if not candidates[i].is_reference and candidates[i].spec][:self.confirm_top]
        revisit = [i for i in dropped_within_reach(candidates, order) if i not in top]
        leaders = [i for i in top + revisit if candidates[i].confirmation is None and i not in self._confirm_tried]
        allowance, by_budget = self._confirm_allowance()
        leaders = self._affordable_leaders(candidates, leaders, allowance, by_budget=by_budget)
        leaders = self._leaders_that_fit(candidates, leaders)
        self._confirm_tried.update(leaders)
        if not leaders or self.cancel.cancelled:
            return {}
        leading = ", ".join(plain.title(candidates[i]) for i in leaders)
        until = "they are told apart" if len(leaders) > 1 else "its median is known to 2%"
        ref = ModelRef.of(self.model)
        jobs = [MeasureJob(model=ref, spec=from_data(candidates[i].spec, CandidateSpec), quick=False,
                           env=dict((candidates[i].config or {}).get("env", {}))) for i in leaders]
        expected: list[float | None] = [candidates[i].p50 for i in leaders]  # sizes the first turns
        beside = ""
        if self._baseline_joins(candidates, leaders, allowance):
            jobs.append(MeasureJob(model=ref, spec=from_data(self.baseline.spec, CandidateSpec), quick=False,
                                   env=dict((self.baseline.spec.get("config") or {}).get("env", {}))))
            expected.append(self.baseline.latency_ms.p50_ms)
            beside = ", beside the baseline so their speedups are measured side by side"
        self.on_event(Event("candidate", f"confirming {leading} with the full method, in turns until {until}{beside} "
                                         f"(at most {allowance:.0f} s of turns)", stage="confirm",
                            index=0, total=len(leaders)))
        outcomes = time_interleaved(jobs, settings=MeasureSettings.default(), timeout_s=timeout_s,
                                    cancel=lambda: self.cancel.cancelled, allowance_s=allowance,
                                    warmup_cap_s=CONFIRM_WARMUP_CAP_S, expected_ms=expected,
                                    reference=len(leaders) if beside else None)
        self._confirm_spent_s += max((o.rounds_s for o in outcomes), default=0.0)
        base_p50 = self._baseline_in_turns(outcomes[len(leaders)] if beside else None)
        confirmed: dict[int, CandidateResult] = {}
        for n, (i, outcome) in enumerate(zip(leaders, outcomes)):
            old = candidates[i]
            if not outcome.ok or outcome.stats is None or not old.p50:
                self.on_event(Event("warning", f"{plain.title(old)}: the full re-measure gave {outcome.status}"
                                               f"{': ' + outcome.reason if outcome.reason else ''}; the screen's "
                                               "figure stays"))
                continue
            # Its figure is now the full method's: a screen that stopped early no longer describes it.
            side_by_side = base_p50 / outcome.stats.p50_ms if base_p50 and outcome.stats.p50_ms else None
            new = dataclasses.replace(old, latency_ms=outcome.stats, stopped_by=str(outcome.stopped_by), dropped="",
                                      throughput=batch_one_retimed(old.throughput, outcome.stats.p50_ms),
                                      speedup=side_by_side or self.baseline.speedup_of(outcome.stats.p50_ms),
                                      roof_share=candidate_roof_share(
                                          self.baseline, old.precision, outcome.stats.p50_ms,
                                          same_work=old.roof_share is not None),
                                      wall_s=(old.wall_s or 0.0) + outcome.wall_s)
            untold = outcome.stopped_by is InterleaveStop.ALLOWANCE
            confirmed[i] = dataclasses.replace(new, confirmation=confirmation(
                old.p50, new, interleaved=len(leaders), allowance_s=allowance if untold else None,
                baseline=self.baseline if side_by_side else None, baseline_p50_ms=base_p50 if side_by_side else None,
                revisited=i in revisit))
            self.on_event(Event("candidate_done", confirm_line(confirmed[i]), stage="confirm", index=n + 1,
                                total=len(leaders), data=to_data(confirmed[i])))
        if self.cancel.cancelled:
            self.sink.warn(f"cancelled: {len(leaders) - len(confirmed)} leaders not confirmed with the full method")
        return confirmed

    def _baseline_joins(self, candidates: Sequence[CandidateResult], leaders: list[int], allowance: float) -> bool:
        """Whether the baseline takes turns with these leaders: it has a spec a worker can open, the allowance has a
        leader's least worthwhile share left for it (CONFIRM_LEADER_MIN_S) beyond theirs, and its worker fits in
        memory beside theirs. Where it does not, the leaders are confirmed alone and their speedups stay over the
        profile's figure: confirming the leaders is the question; the side-by-side ratio comes with it where it can.
        """
        from planner.hardware.memory_limits import current_limits, max_concurrent_workers

        if not leaders or not self.baseline.spec.get("plugin") or not self.baseline.latency_ms.p50_ms:
            return False
        if int(allowance // CONFIRM_LEADER_MIN_S) <= len(leaders):
            self.on_event(Event("log", "the baseline is not timed again beside the leaders: the confirmation's "
                                       f"{allowance:.1f} s of turns has no room for it; their speedups are over its "
                                       "profile's figure"))
            return False
        peaks = [candidates[i].tree_peak_bytes or candidates[i].peak_memory_bytes or 0 for i in leaders]
        peaks.append(self.baseline.peak_memory_bytes or 0)
        if max(peaks) and max_concurrent_workers(current_limits(), max(peaks)) <= len(leaders):
            self.on_event(Event("log", "the baseline is not timed again beside the leaders: its worker does not fit "
                                       "in memory beside theirs; their speedups are over its profile's figure"))
            return False
        return True

    def _baseline_in_turns(self, outcome: "InterleavedOutcome | None") -> float | None:
        """The baseline's median from the turns it took beside the leaders; None (with a warning) when it failed."""
        if outcome is None:
            return None
        if not outcome.ok or outcome.stats is None:
            self.on_event(Event("warning", f"the baseline, timed again beside the leaders, gave {outcome.status}"
                                           f"{': ' + outcome.reason if outcome.reason else ''}; their speedups "
                                           "stay over its profile's figure"))
            return None
        return outcome.stats.p50_ms

    def _confirm_allowance(self) -> tuple[float, bool]:
        """(seconds of turns the next confirm round may take, whether the budget is what limits them): what the
        plan's allowance has left, and no more than the budget (if one was given) leaves after the workers' start."""
        left = self.confirm_allowance_s - self._confirm_spent_s
        budget_left = self.budget.left() - CONFIRM_START_S
        return max(min(left, budget_left), 0.0), budget_left < left

    def _affordable_leaders(self, candidates: Sequence[CandidateResult], leaders: list[int],
                            allowance: float, *, by_budget: bool) -> list[int]:
        """The leaders the allowance can time (the first in rank order); the rest are said to be cut and marked
        tried, so that a later round does not confirm what this one said it cut."""
        affordable = min(len(leaders), int(allowance // CONFIRM_LEADER_MIN_S))
        if affordable == len(leaders):
            return leaders
        left_out = leaders[affordable:]
        left = ", ".join(plain.title(candidates[j]) for j in left_out)
        what = (f"{len(left_out)} leader{'s' if len(left_out) != 1 else ''} not confirmed with the full method "
                f"({left})")
        if by_budget:
            cut = self.budget.cut_step(what, f"{self.budget.out_of_time()}; the ranking uses their screen figures")
            self.on_event(self.budget.event(cut))
        else:
            self.on_event(Event("log", f"{what}: the quick plan's {self.confirm_allowance_s:g} s of confirming turns "
                                       f"has {allowance:.1f} s left; the ranking uses their screen figures"))
        self._confirm_tried.update(left_out)
        return leaders[:affordable]

    def _leaders_that_fit(self, candidates: Sequence[CandidateResult], leaders: list[int]) -> list[int]:
        """The leaders whose workers fit in memory together (timed in turns, they are all open at once); the rest
        are said to be left out and marked tried.

        Each worker is sized by the largest peak a leader's worker reached in its screen: on a 2 GB board three
        torch workers of about 1 GB each would be killed, where three ONNX Runtime ones of 150 MB fit.
        """
        from planner.hardware.memory_limits import current_limits, max_concurrent_workers

        peaks = [candidates[i].tree_peak_bytes or candidates[i].peak_memory_bytes or 0 for i in leaders]
        if len(leaders) < 2 or not max(peaks):
            return leaders
        limits = current_limits()
        fit = max_concurrent_workers(limits, max(peaks))
        if fit >= len(leaders):
            return leaders
        left_out = leaders[fit:]
        left = ", ".join(plain.title(candidates[j]) for j in left_out)
        self.on_event(Event("log", f"{len(left_out)} leader{'s' if len(left_out) != 1 else ''} not confirmed with "
                                   f"the full method ({left}): their workers take up to {units.size(max(peaks))} "
                                   f"each and only {fit} fit at once in {units.size(limits.available_bytes)} "
                                   "available; the ranking uses their screen figures"))
        self._confirm_tried.update(left_out)
        return leaders[:fit]

    def _predict(self, specs: list[CandidateSpec]) -> tuple[list[CandidateSpec], dict[int, Prediction]]:
        """Each spec's predicted speedup band (its plugin's `expect`); the specs reordered most promising first
        (stable)."""
        facts = to_data(self.baseline)
        base = self._plugins.get(str(self.baseline.spec.get("plugin", "")))
        baseline_fuses = bool(base is not None and base.fuses_graph)
        predictions = {id(s): self._plugins[s.plugin].expect(s, self.hw, facts, baseline_fuses=baseline_fuses)
                       for s in specs}

        for spec in specs:
            p = predictions[id(spec)]
            self.on_event(Event("log", f"predicted {spec.label}: {p.band() or 'no band'} — {p.basis}"))
        return sorted(specs, key=lambda s: _promise(predictions[id(s)])), predictions

    def _outputs_judgeable(self, labels: list[np.ndarray] | None) -> bool:
        """Whether the fidelity check can judge a change of arithmetic here: with labels accuracy decides; without,
        only where the original's outputs depend on the inputs enough to test (not with random weights)."""
        from planner.measure.fidelity import compare

        if labels is not None or not self.reference:
            return True
        return not compare(self.reference, self.reference, **self._output_kind()).cannot_judge

    def declared(self, plugin: str, precision: str) -> Declared | None:
        """What a candidate's plugin declares about it (None for a plugin that is not loaded)."""
        found = self._plugins.get(plugin)
        return self.declared_by(found, precision) if found is not None else None

    def described(self, spec: CandidateSpec) -> Declared | None:
        """What a candidate's plugin declares about it, with the candidate's plain title and apply snippet
        (`Plugin.describe`); None for a plugin that is not loaded."""
        from planner.plugins import description_of

        declared = self.declared(spec.plugin, str(spec.precision))
        plugin = self._plugins.get(spec.plugin)
        if declared is None or plugin is None:
            return declared
        said = description_of(plugin, spec, self.model.inputs)
        return dataclasses.replace(declared, title=said.title, apply=said.apply)

    def spec_title(self, spec: CandidateSpec) -> str:
        """A spec in plain words (its plugin's title), for the reasons a plan records; its label without one."""
        described = self.described(spec)
        return described.title if described is not None and described.title else spec.label

    @staticmethod
    def declared_by(found: Plugin, precision: str) -> Declared:
        """What a plugin declares about a candidate of the given precision."""
        decl = found.declaration()
        return Declared(phase=int(decl.phase), arithmetic=str(candidate_arithmetic(decl.arithmetic, precision)),
                        runtime=decl.runtime, transforms_model=decl.transforms_model, is_baseline=decl.is_baseline)

    def _is_baseline(self, spec: CandidateSpec) -> bool:
        """Whether a spec runs exactly what the baseline ran (ORT defaults on an ONNX model's own file).

        Measuring it again would put one configuration in the table twice, with two figures.
        """
        base = self.baseline.spec
        same = (spec.plugin == base.get("plugin") and spec.config == base.get("config")
                and str(spec.precision) == base.get("precision")
                and dict(spec.artifacts) == dict(base.get("artifacts") or {}))
        if same:
            self.on_event(Event("log", f"{spec.label}: the same configuration as the baseline, not measured twice"))
        return same

    def _context(self) -> PlanContext:
        """Find the plugins (saying once which failed to load) and make the one context every build shares."""
        from planner.measure.gate import PlanGate
        from planner.plugins import PlanContext, discover

        self._plugins, self._issues = discover()
        for issue in self._issues:
            self.sink.warn(f"plugin {issue.name}: {issue.reason}")
            self.on_event(Event("warning", f"plugin {issue.name}: {issue.reason}"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        ctx = PlanContext(hw=self.hw, model=self.model, workdir=self.workdir, quick=self.quick,
                          cancel=self.cancel, log=lambda msg: self.on_event(Event("log", msg)),
                          val_data=self.val_data, val_data_basis=self.val_data_basis,
                          accuracy_budget=self.accuracy_budget,
                          options=self.plugin_options)
        ctx.gate = PlanGate.for_context(ctx)  # the rule _gate applies below, for plugins that pick a setting first
        return ctx

    def _build(self, names: list[str], ctx: PlanContext, *, then: Sequence[str] = ()) -> list[CandidateSpec] | None:
        """Every spec the named plugins yield; None when cancelled while building (what was built, the plugins left
        and those `then` to build later are recorded as not reached)."""
        plugins = self._plugins
        specs: list[CandidateSpec] = []
        order = self._build_order(names, plugins)
        for at, name in enumerate(order):
            plugin = plugins.get(name)
            if plugin is None:
                reason = next((i.reason for i in self._issues if i.name == name), "not installed or not registered")
                self.sink.skip_plugin(name, [reason])
                continue
            title = plugin.title or name  # what people read in the progress lines; records keep the name
            reasons = plugin.check(self.hw, self.model)
            if reasons:
                self.sink.skip_plugin(name, reasons)
                self.on_event(Event("log", f"skipping {title}: {'; '.join(reasons)}"))
                continue
            if plugin.build_cost_s and not self.budget.affords(plugin.build_cost_s + TYPICAL_SCREEN_S
                                                               + self._confirm_reserve_s()):
                cut = self.budget.cut_step(
                    f"{title} not built", f"its build takes about {plugin.build_cost_s:g} s and "
                                         f"{self.budget.out_of_time()}")
                self.sink.skip_plugin(name, [f"not built: {cut.partition(': ')[2]}"])
                self.on_event(self.budget.event(cut))
                continue
            self.on_event(Event("stage", f"building candidates: {title}", stage="candidates"))
            try:
                specs.extend(s for s in plugin.candidates(ctx) if not self._is_baseline(s))
            except Exception as exc:  # noqa: BLE001 - one plugin's failure never ends the plan
                reason = f"{type(exc).__name__}: {exc}"
                declared = self.declared(name, "fp32")
                if declared is not None:
                    declared = dataclasses.replace(declared, title=f"{title}: no candidates")
                self.sink.add_candidate(CandidateResult(
                    plugin=name, label=f"{name} (no candidates)", config={}, precision="fp32",
                    status=Status.FAILED, reason=f"building candidates failed: {reason}", declared=declared))
                self.on_event(Event("warning", f"{title}: building candidates failed: {reason}"))
            if self.cancel.cancelled:
                self._stop_before(specs, [*order[at + 1:], *then])
                return None
        return specs

    def _stop_before(self, specs: Sequence[CandidateSpec], plugins: Sequence[str]) -> None:
        """Record what a cancel left unreached: these candidates, and these plugins' candidates, never built."""
        unbuilt = [f"{getattr(self._plugins.get(name), 'title', '') or name}: its candidates were not built"
                   for name in plugins]
        self.sink.stopped_before([spec.label for spec in specs] + unbuilt)

    def _build_order(self, names: list[str], plugins: dict[str, Plugin]) -> list[str]:
        """The plugins in the order they build: as planned, except that under a budget the costly builds
        (their declared `build_cost_s`) come last, by predicted speedup per second of building."""
        if not self.budget.capped:
            return list(names)
        from planner.plugins import CandidateSpec, Precision

        facts = to_data(self.baseline)

        def value_per_s(name: str) -> float:
            plugin = plugins[name]
            try:
                probe = CandidateSpec(plugin=name, precision=Precision(plugin.build_precision))
                p = plugin.expect(probe, self.hw, facts)
            except Exception:  # noqa: BLE001 - a plugin whose prediction needs a real candidate builds last
                return 0.0
            mid = (p.low + p.high) / 2 if p.low is not None and p.high is not None else 1.0
            return mid / plugin.build_cost_s

        cheap = [n for n in names if n not in plugins or not plugins[n].build_cost_s]
        costly = sorted((n for n in names if n not in cheap), key=value_per_s, reverse=True)
        return cheap + costly

    def _output_kind(self) -> dict:
        """compare()'s kind arguments: the `--output-kind` given for the compared output, else none (its shape says)."""
        # A run built with only the gate's inputs (as the gate's tests build one) has no options: read from the shape.
        options = getattr(self, "plugin_options", None) or PluginOptions()
        kind = options.output_kind
        return {"kind": kind, "kind_basis": options.output_kind_basis} if kind else {}

    def _baseline_drift(self) -> float | None:
        """How far the original's output moved between two calls on the same input; None when it did not."""
        baseline = getattr(self, "baseline", None)
        drift = (getattr(baseline, "info", None) or {}).get("repeat_drift")
        return float(drift) if drift else None

    def _record_validation(self, labels: list[np.ndarray] | None) -> None:
        from planner.measure.fidelity import compare

        own = (compare(self.reference, self.reference, labels=labels, **self._output_kind())
               if labels is not None else None)
        accuracy = own.accuracy if own is not None else None
        self.sink.set_validation(Validation(folder=str(self.val_data), labels=labels is not None,
                                            samples=int(sum(len(b) for b in self.reference)),
                                            baseline_accuracy=accuracy, basis=self.val_data_basis),
                                 baseline_accuracy=accuracy)

    def _measure(self, spec: CandidateSpec, labels: list[np.ndarray] | None, *, timeout_s: float,
                 quick: bool | None = None, drop_above_ms: float | None = None) -> CandidateResult:
        """Measure one spec in a worker, then compare its outputs with the reference and gate it.

        `quick=False` on a quick run times with the full method but keeps the run's fidelity inputs
        (the reference was computed on them) and skips the batch sweep the screen skipped.
        """
        from planner.measure.evaluate import MeasureJob, fidelity_batch_count, measure
        from planner.plugins import ModelRef

        timing_quick = self.quick if quick is None else quick
        job = MeasureJob(model=ModelRef.of(self.model), spec=spec, quick=timing_quick,
                         weights_bytes=self.model.size_bytes,
                         sweep_max_batch=0 if self.quick else 8,
                         fidelity_batches=fidelity_batch_count(self.quick),
                         val_data=str(self.val_data) if self.val_data else None,
                         env=dict(spec.config.get("env", {})), streams=True if self.streams else None,
                         drop_above_ms=drop_above_ms, energy=getattr(self.baseline, "energy_source", None),
                         plan_dir=str(self.workdir.parent))  # the plan's folder holds artifacts/
        result, outputs = measure(job, timeout_s=timeout_s)
        if result.status is not Status.OK or outputs is None:
            return result
        declared = self.declared(spec.plugin, str(spec.precision))
        arithmetic = declared.arithmetic if declared is not None else str(Arithmetic.NONE)
        status, reason, fidelity = self._gate(result.precision, outputs, labels,
                                              changes_function=arithmetic == Arithmetic.APPROXIMATE,
                                              generated_inputs=self.val_data is None)
        plugin = self._plugins.get(spec.plugin)
        broken = self._broken_quantization(result.precision, arithmetic, fidelity)
        if broken:
            status, reason = Status.FAILED, broken
        elif arithmetic == Arithmetic.STRUCTURAL:
            # A new architecture has new (random) weights: its outputs cannot match until it is trained.
            status, reason = Status.REJECTED, "needs retraining: speed measured, accuracy not"
        elif status in (Status.REJECTED, Status.UNCONFIRMED) and plugin is not None:
            reason = plugin.explain_gate(spec, str(status), reason)
        # Only a candidate that keeps the model's multiply-adds is measured against the baseline's FLOPs.
        same_work = arithmetic in (Arithmetic.NONE, Arithmetic.REDUCED_PRECISION)
        return dataclasses.replace(result, status=status, reason=reason or result.reason, fidelity=fidelity,
                                   speedup=self.baseline.speedup_of(result.p50),
                                   roof_share=candidate_roof_share(self.baseline, result.precision, result.p50,
                                                                   same_work=same_work))

    def _broken_quantization(self, precision: str, arithmetic: str, fidelity: Fidelity | None) -> str:
        """Why an int8 candidate built by quantization failed as a build (`broken_quantization`), or ''.

        Not where the original answers the same input differently from call to call: then no output can be
        compared with it.
        """
        from planner.measure.fidelity import broken_quantization
        from planner.plugins import Precision

        if str(precision) != str(Precision.INT8) or arithmetic != Arithmetic.REDUCED_PRECISION:
            return ""
        if self._baseline_drift():
            return ""
        return broken_quantization(fidelity)

    def _gate(self, precision: str, outputs: list[np.ndarray], labels: list[np.ndarray] | None, *,
              changes_function: bool = False,
              generated_inputs: bool = False) -> tuple[Status, str, Fidelity | None]:
        """(status, reason, fidelity): rejected when outputs stray past the precision's gate.

        A candidate that changes the function by design (pruning, low-rank, fine-tuned) is judged on
        accuracy alone where there are labels: its outputs cannot match the original's to fp32 cosine.

        `generated_inputs`: the inputs are generated (no validation data), so a pass or a failure says
        how the outputs behave on those inputs only. A candidate that changes the arithmetic (bf16,
        fp16, INT8, ternary, an approximation) and fails there is unconfirmed, not rejected: random
        inputs sit near decision boundaries real data may never reach. An fp32 candidate should be
        exact on any input, so it is still rejected.

        Where the check cannot judge (the outputs barely depend on the inputs used, as with random
        weights, or a map has no foreground on them), a candidate that passes what could be compared is
        not established either, on any inputs: nothing there could have failed it. Only an fp32 candidate
        that keeps the function and is exact even on the small input-dependent part passes
        (`judge_outputs`).
        """
        from planner.measure.fidelity import judge_outputs, settle_words
        from planner.plugins import Precision

        # The one rule, which plugins choosing a setting meet too (ctx.gate); what follows is the plan's reading.
        why, decided_by, fid = judge_outputs(self.reference, outputs, labels=labels, precision=precision,
                                             accuracy_budget=self.accuracy_budget,
                                             changes_function=changes_function, **self._output_kind())
        if fid is None:
            return Status.REJECTED, why, None
        drift = self._baseline_drift()
        if why and drift:
            # The original answers the same input differently from call to call: a candidate's difference
            # from it says nothing about the candidate.
            return Status.UNCONFIRMED, (
                f"{NOT_ESTABLISHED}: the original model's own outputs change from call to call on the same input "
                f"(relative change {drift:.2g}): it keeps state between calls, as a streaming model does, or draws "
                f"random numbers, so no candidate can be checked against it ({why})"), fid
        if generated_inputs and decided_by:
            decided_by += ", on generated inputs"
        if fid.cannot_judge and not why and fid.accuracy is None and not fid.settle_samples:
            # Which data would settle it travels with the test's words to the report, the TUI and --json (an
            # accuracy on too few labels says how many would, in its own words).
            decided_by += f"; {settle_words(generated_inputs)}"
        fid = dataclasses.replace(fid, decided_by=decided_by)
        if fid.cannot_judge and not why:
            # Labelled real data that is too small to tell is not established, though real.
            lead = NOT_ESTABLISHED if generated_inputs and fid.accuracy is None else "not established"
            return Status.UNCONFIRMED, f"{lead}: {decided_by}", fid
        # Outputs that are not finite are broken on any input, generated or real.
        finite = math.isfinite(fid.cosine) and math.isfinite(fid.max_abs_error)
        if why and finite and generated_inputs and (precision != Precision.FP32 or changes_function):
            reason = f"{NOT_ESTABLISHED}: on generated inputs, {why}"
            if precision == Precision.TERNARY:
                # Still a potential that usually needs training, but generated inputs cannot show it failed.
                reason += " (post-training ternary usually needs ternary-aware training)"
            return Status.UNCONFIRMED, reason, fid
        if why and precision == Precision.TERNARY:
            # Post-training ternary rarely keeps accuracy: its size and speed are a potential, not a plan.
            return Status.REJECTED, f"fails fidelity: needs ternary-aware training ({why})", fid
        if why:
            return Status.REJECTED, f"fidelity check: {why}", fid
        return Status.OK, "", fid


def candidate_line(r: CandidateResult) -> str:
    """One line of progress for a finished candidate."""
    if r.measured and r.p50:
        tail = f" — {r.reason}" if r.status in (Status.REJECTED, Status.UNCONFIRMED) else ""
        accuracy = ""
        if r.fidelity is not None and r.fidelity.accuracy is not None:
            accuracy = f", accuracy {units.accuracy(r.fidelity.accuracy)}"
            if r.fidelity.reference_accuracy is not None:
                accuracy += f" (original {units.accuracy(r.fidelity.reference_accuracy)})"
        return f"  {r.status}: {r.label}: p50 {units.ms(r.p50)} ({units.speedup(r.speedup)}){accuracy}{tail}"
    return f"  {r.status}: {r.label}: {r.reason}"


def batch_one_retimed(points: Sequence[ThroughputPoint], p50_ms: float) -> tuple[ThroughputPoint, ...]:
    """The batch sweep with its batch-1 point taken from the full re-measure: that point is the screen's median, and
    one call's latency is one fact, so the sweep's batch 1 and the candidate's p50 must read the same number."""
    return tuple(dataclasses.replace(p, latency_p50_ms=p50_ms,
                                     samples_per_s=p.samples_per_s * p.latency_p50_ms / p50_ms)
                 if p.batch == 1 and p.latency_p50_ms > 0 and p50_ms > 0 else p for p in points)


def confirmation(screen_p50: float, full: CandidateResult, *, interleaved: int = 1,
                 allowance_s: float | None = None, baseline: Baseline | None = None,
                 baseline_p50_ms: float | None = None, revisited: bool = False) -> Confirmation:
    """How a full re-measure compares with the screen's figure, and what a disagreement means.

    `interleaved`: how many leaders were timed in turns with this one (1: alone). `allowance_s`: the turns
    ended at this allowance, before the leaders were told apart (None: they were told apart, or it settled).
    `baseline_p50_ms`: the baseline's median in the same turns, the one `full.speedup` was worked out from
    (`baseline`: its profile, whose figure and validity the note sets beside it). `revisited`: the screen had
    dropped it, and it was timed again for being within reach of the best.
    """
    assert full.p50 is not None
    change = (full.p50 - screen_p50) / screen_p50
    reproduced = abs(change) <= REPRODUCE_TOLERANCE
    note = ""
    if not reproduced:
        note = (f"the 2-second screen read {units.ms(screen_p50)}, the full method {units.ms(full.p50)} "
                f"({change:+.0%}): the screen was disturbed or too short; the full figure is the one ranked")
    elif full.latency_ms is not None and full.latency_ms.unstable:
        note = "reproduced, but the samples spread widely: re-run on an idle machine to trust the order"
    if allowance_s is not None:
        untold = (f"not told apart from the other leaders within the quick plan's {allowance_s:.0f} s of turns: "
                  "their medians' 95% intervals overlap, so their order is within the noise (a plan without --quick "
                  "times each to a 2% interval)" if interleaved > 1 else
                  f"its median was not known to 2% within the quick plan's {allowance_s:.0f} s of turns")
        note = f"{note}; {untold}" if note else untold
    if revisited:
        again = (f"its screen stopped early as clearly slower at {units.ms(screen_p50)}, but within "
                 f"{DROPPED_REACH:g}x of the best, so it was timed again beside the leaders, where a burst of load "
                 "falls on all of them alike")
        note = f"{again}; {note}" if note else again
    if baseline is not None and baseline_p50_ms:
        side = (f"speedup measured side by side: the baseline, timed in the same turns, read "
                f"{units.ms(baseline_p50_ms)} (its profile {units.ms(baseline.latency_ms.p50_ms)})")
        if baseline.invalid:
            side += (f"; the profile's own timing is invalid ({baseline.invalid}), but this re-time beside the "
                     "leaders is valid for the ratio, so this speedup is worked out over it")
        note = f"{note}; {side}" if note else side
    return Confirmation(screen_p50_ms=screen_p50, rel_change=change, reproduced=reproduced, note=note,
                        interleaved=interleaved if interleaved > 1 else 0,
                        baseline_p50_ms=baseline_p50_ms if baseline is not None else None,
                        revisited=revisited)


def confirm_line(r: CandidateResult) -> str:
    """One line of progress for a confirmed leader: both figures and whether they agreed."""
    c = r.confirmation
    if c is None or r.p50 is None:
        return candidate_line(r)
    from planner.measure.interleave import InterleaveStop

    verdict = "reproduced" if c.reproduced else "did not reproduce"
    stopped = f"; {r.stopped_by}" if r.stopped_by in (InterleaveStop.APART, InterleaveStop.ALLOWANCE) else ""
    return (f"  confirmed {r.label}: full method p50 {units.ms(r.p50)} against the screen's "
            f"{units.ms(c.screen_p50_ms)} ({c.rel_change:+.0%}, {verdict} within 10%{stopped})")


def _promise(prediction: Prediction) -> float:
    """How a candidate sorts by its predicted band (smaller first): the band's middle, negated; 0 without one."""
    low, high = prediction.low, prediction.high
    return -((low + high) / 2) if low is not None and high is not None else 0.0
