"""The budgeted search's bookkeeping: the best candidate so far, each runtime family's best, and what a
screen costs, so the candidates step can drop, skip or cut with a reason.

The method is successive halving over the candidates the plugins offer: every candidate is screened
briefly, most promising first; one that is clearly slower than the best so far stops early (its
median's 95% interval lies wholly above the best's, once its samples span planner.measure.timer.DROP_MIN_S,
and one dropped within DROPPED_REACH of the best is timed again with the leaders); and the few that stay
close are confirmed with
the full method's settings before ranking, timed in turns until they are told apart or a fixed allowance
is spent (planner.pipeline.candidates.CandidateRun.confirm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from planner import units
from planner.plugins.declarations import Arithmetic
from planner.results import CandidateResult, Status
from planner.results import names as plain

if TYPE_CHECKING:
    from planner.pipeline.budget import Budget
    from planner.plugins import CandidateSpec
    from planner.results.values import Declared, Prediction

VARIANT_REACH = 1.5
"""How much faster another setting of one runtime and precision (threads, a static shape, a latency or
throughput hint, a quantization mode) may plausibly be than the setting already screened. On
demo:inefficient (2-core AVX-512 VNNI EPYC) the largest such gain measured was 1.34x: OpenVINO INT8
from NNCF's QDQ with a static shape, 17.9 ms against 24.0 ms dynamic. A family whose best so far is
slower than the overall best by more than this has its other settings skipped in a quick or budgeted
plan."""

TYPICAL_SCREEN_S = 3.0
"""What one candidate's screen is assumed to take before any has been measured (a worker's start, the
runtime's load, a 2-second timing and the fidelity inputs), for the budget's first question."""


def family_of(plugin: str, precision: str, declared: "Declared | None") -> str:
    """The runtime and precision a candidate deploys: settings within one family are near-duplicates."""
    runtime = declared.runtime if declared is not None and declared.runtime else plugin
    return f"{runtime} {precision}"


def _interval(c: CandidateResult) -> tuple[float, float] | None:
    """(low, high) of a measured candidate's median 95% interval, from its p50 and relative half-width."""
    lat = c.latency_ms
    if lat is None or not math.isfinite(lat.ci95_rel):
        return None
    return lat.p50_ms * (1 - lat.ci95_rel), lat.p50_ms * (1 + lat.ci95_rel)


@dataclass
class Search:
    """What the screen has found so far (see the module docstring)."""

    budget: "Budget"
    quick: bool = False
    best: CandidateResult | None = None
    family_best: dict[str, CandidateResult] = field(default_factory=dict)
    phase_best: dict[int, CandidateResult] = field(default_factory=dict)  # the fastest runtime candidate per phase
    screened: list[CandidateResult] = field(default_factory=list)  # every candidate measured so far
    budget_cut: str = ""  # the sentence recorded when the budget first cut the screen
    baseline_disturbed: bool = False  # the baseline was timed under interference (its audit says so)

    def consider(self, result: CandidateResult) -> None:
        """Take one finished candidate (or the baseline) into account."""
        if result.is_reference and result.audit is not None and result.audit.disturbed:
            self.baseline_disturbed = True
        self.screened.append(result)
        if result.status is not Status.OK or not result.p50:
            return
        if self.best is None or result.p50 < (self.best.p50 or math.inf):
            self.best = result
        # The baseline is the yardstick, not a setting of a family: a runtime's other settings are screened against
        # the best so far, never skipped for the baseline's own speed.
        if result.declared is not None and not result.declared.transforms_model and not result.is_reference:
            key = family_of(result.plugin, result.precision, result.declared)
            held = self.family_best.get(key)
            if held is None or result.p50 < (held.p50 or math.inf):
                self.family_best[key] = result
            if not result.is_reference and not result.declared.is_baseline:
                leader = self.phase_best.get(result.declared.phase)
                if leader is None or result.p50 < (leader.p50 or math.inf):
                    self.phase_best[result.declared.phase] = result

    def bound(self) -> float | None:
        """The drop bound for the next screen (ms): the top of the best's median interval; None with no best yet."""
        found = _interval(self.best) if self.best is not None else None
        return found[1] if found else None

    def dropped_reason(self, result: CandidateResult) -> str:
        """Why a screened candidate got no more time: its timing stopped because it was clearly slower."""
        if result.stopped_by != "dropped" or self.best is None or result.latency_ms is None:
            return ""
        # The best's own median is not repeated here: a confirmed leader's is re-measured later, and one fact
        # printed with two values is a contradiction; its interval's top is the figure this decision rested on.
        return (f"clearly slower than {plain.title(self.best)} as the screen timed it: after "
                f"{result.latency_ms.samples} samples its median's 95% interval lay wholly above "
                f"{units.ms(self.bound())}, the top of the best's, so timing stopped there")

    def variant_skip(self, spec: "CandidateSpec", declared: "Declared | None") -> str:
        """Why another setting of an already-screened family is skipped ('' when it is screened)."""
        if not (self.quick or self.budget.capped) or declared is None or declared.transforms_model:
            return ""
        if declared.is_baseline or self.best is None or not self.best.p50:
            return ""
        key = family_of(spec.plugin, str(spec.precision), declared)
        held = self.family_best.get(key)
        if held is None or not held.p50:
            return ""
        low = (_interval(held) or (held.p50, held.p50))[0]
        top = (_interval(self.best) or (self.best.p50, self.best.p50))[1]
        if low <= VARIANT_REACH * top:
            return ""
        best = f"{plain.title(self.best)}, {units.ms(self.best.p50)}"
        return (f"not screened: {plain.title(held)}, the same runtime and precision, measured {units.ms(held.p50)}, "
                f"{held.p50 / self.best.p50:.1f}x the best so far ({best}); "
                f"other settings of one runtime and precision rarely move it by more than {VARIANT_REACH:g}x")

    def prediction_skip(self, declared: "Declared | None", prediction: "Prediction | None") -> str:
        """Why a candidate predicted to stay well behind its roadmap phase's best is not screened ('' otherwise).

        Only in a quick or budgeted plan, and never for an architecture change (it is measured for its
        own phase and for how it combines with the hardware candidate). The margin is VARIANT_REACH on
        the top of the predicted band: the band's basis is a rule of thumb, not a measurement.
        """
        if not (self.quick or self.budget.capped) or declared is None or declared.transforms_model:
            return ""
        if prediction is None or prediction.high is None or self.baseline_disturbed:
            # Speedups over a baseline timed while the machine was busy are inflated: no band can be weighed
            # against them.
            return ""
        leader = self.phase_best.get(declared.phase)
        if leader is None or not leader.speedup or prediction.high * VARIANT_REACH >= leader.speedup:
            return ""
        return (f"not screened: predicted at most {units.speedup(prediction.high)} ({prediction.basis}), and "
                f"{plain.title(leader)} already measured {units.speedup(leader.speedup)} in the same roadmap phase")

    def typical_s(self) -> float:
        """What the next screen is expected to take: the median of those measured so far."""
        return typical_wall_s(self.screened)


DROPPED_REACH = VARIANT_REACH
"""How far above the best ranked median a dropped candidate's screened median may lie and still be timed again
among a quick plan's leaders (`dropped_within_reach`).

A screen drops a candidate once its median's interval lies wholly above the best's, but that interval only
describes the spell its samples were taken in: a burst of load over it lifts the whole interval. On a small
classifier (a busy 2-core AMD EPYC) OpenVINO f32 with a dynamic shape read 1.02 ms in its dropped screen against
the 0.82 ms it was compared with, 1.24x; no burst makes a candidate read much more than half again its own time
without the timing audit calling the spell disturbed, and no setting of one runtime and precision moves it by
more than VARIANT_REACH either. So a drop that close is checked, in turns with the leaders (where a burst falls
on all of them alike), and one further off keeps its drop."""


def dropped_within_reach(candidates: Sequence[CandidateResult], order: Sequence[int]) -> list[int]:
    """The ranked candidates a screen dropped whose screened median lies within DROPPED_REACH of the best ranked
    median, in rank order: a quick plan's confirmation times them again beside its leaders
    (planner.pipeline.candidates.CandidateRun.confirm) instead of ranking them on a drop a burst of load could
    have decided. The baseline, and a candidate with no spec to open again, are never among them."""
    best = next((candidates[i].p50 for i in order if candidates[i].p50), None)
    if best is None:
        return []
    reach = DROPPED_REACH * best
    return [i for i in order if candidates[i].dropped and not candidates[i].is_reference and candidates[i].spec
            and (candidates[i].p50 or math.inf) <= reach]


def can_rank(declared: "Declared | None", *, outputs_judgeable: bool) -> bool:
    """Whether a candidate's measurement can end ranked: a new architecture never can (its weights are untrained),
    and a change of arithmetic only where the fidelity check can judge the outputs (with random weights and
    generated inputs it ends "not established" however fast it runs)."""
    if declared is None:
        return True
    if declared.arithmetic == Arithmetic.STRUCTURAL:
        return False
    return outputs_judgeable or declared.arithmetic == Arithmetic.NONE


def screen_order(specs: Sequence["CandidateSpec"], promise: Callable[["CandidateSpec"], float],
                 declared: Callable[["CandidateSpec"], "Declared | None"], *,
                 outputs_judgeable: bool) -> list["CandidateSpec"]:
    """The order a quick or budgeted search screens in: what can end ranked first, then breadth first.

    Within each of the two groups (can be ranked, cannot: see `can_rank`), every runtime and precision's most
    promising setting comes before any family's second: when the budget runs out, each runtime has had
    its look, instead of one family's near-duplicates taking the whole budget. Within a round, the most
    promising first (`promise`: smaller sorts first). The sort is stable, so ties keep the plugins' order.
    """
    rounds: dict[str, int] = {}
    keyed = []
    for spec in sorted(specs, key=promise):
        decl = declared(spec)
        family = family_of(spec.plugin, str(spec.precision), decl)
        rounds[family] = rounds.get(family, -1) + 1
        keyed.append(((not can_rank(decl, outputs_judgeable=outputs_judgeable), rounds[family], promise(spec)), spec))
    return [spec for _, spec in sorted(keyed, key=lambda pair: pair[0])]


def typical_wall_s(candidates: Iterable[CandidateResult]) -> float:
    """The median wall time of the measured candidates (the baseline left out); TYPICAL_SCREEN_S before any."""
    walls = sorted(c.wall_s for c in candidates if c.wall_s and c.measured and not c.is_reference)
    return walls[len(walls) // 2] if walls else TYPICAL_SCREEN_S

