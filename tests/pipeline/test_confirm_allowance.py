"""A quick plan's confirmation is bounded by its allowance, not by an interval target: its leaders are timed in
turns until they are told apart or the plan's seconds of turns are spent, every confirm round sharing them, and
each confirmed result says which ended it and whether the screen's figure held.

The interleaved workers are scripted (tests/measure/scripted_turns.py): each leader answers with latencies around
a median the test gives, on a fake clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_turns import install

from planner.codec import to_data
from planner.events import CancelToken, Event
from planner.measure import interleave
from planner.pipeline.budget import Budget
from planner.pipeline.candidates import CONFIRM_ALLOWANCE_S, CONFIRM_LEADER_MIN_S, CONFIRM_START_S, CandidateRun
from planner.plugins import CandidateSpec
from planner.results import Baseline, CandidateResult, Status
from planner.results.ranking import rank_candidates
from planner.results.values import LatencyStats, ModelSummary


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=20, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.01)


BASELINE = Baseline(model=ModelSummary("tiny", "demo:tiny", "torch", 1, 1), input_shape=(2, 3, 8, 8),
                    latency_ms=_latency(100.0))


def _screened(label: str, p50: float) -> CandidateResult:
    """A leader as the screen left it: its 2-second figure, and the spec a worker would open."""
    spec = CandidateSpec(plugin="test.scripted", label=label)
    return CandidateResult(plugin=spec.plugin, label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=_latency(p50), spec=to_data(spec), wall_s=3.0, stopped_by="time cap")


class _Sink:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def _run(tiny, tmp_path: Path, events: list[Event], budget: Budget | None = None) -> CandidateRun:
    return CandidateRun(hw=None, model=tiny, baseline=BASELINE, reference=[], workdir=tmp_path,  # type: ignore[arg-type]
                        quick=True, val_data=None, accuracy_budget=None, on_event=events.append,
                        cancel=CancelToken(), sink=_Sink(), budget=budget or Budget())  # type: ignore[arg-type]


def _allowances(monkeypatch) -> list[float | None]:
    """Every allowance confirm hands the interleaved timing, in order."""
    seen: list[float | None] = []
    real = interleave.time_interleaved

    def spy(jobs, **kwargs):
        seen.append(kwargs.get("allowance_s"))
        return real(jobs, **kwargs)

    monkeypatch.setattr(interleave, "time_interleaved", spy)
    return seen


def test_leaders_told_apart_early_stop_there_and_say_so(tiny, tmp_path, monkeypatch) -> None:
    """Leaders of 20, 26 and 30 ms are confirmed in a few seconds of turns, each "told apart" and reproduced."""
    script = install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0})
    cands = (BASELINE.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 31.0))
    events: list[Event] = []
    run = _run(tiny, tmp_path, events)
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert sorted(confirmed) == [1, 2, 3]
    for result in confirmed.values():
        assert result.stopped_by == "told apart"
        conf = result.confirmation
        assert conf is not None and conf.reproduced and conf.interleaved == 3 and conf.note == ""
        assert result.wall_s is not None and result.wall_s > 3.0  # the screen's seconds and the turns'
    assert script.now < CONFIRM_ALLOWANCE_S / 2 and run._confirm_spent_s == pytest.approx(script.now)
    assert "told apart" in events[0].message and "told apart" in events[-1].message


def test_leaders_never_told_apart_stop_at_the_allowance_still_ranked(tiny, tmp_path, monkeypatch) -> None:
    """Two leaders with one median are timed for the allowance and no longer; both are ranked on the full figures,
    and their confirmation says their order is within the noise."""
    script = install(monkeypatch, {"a": 20.0, "b": 20.0})
    cands = (BASELINE.as_candidate(), _screened("a", 19.0), _screened("b", 21.5))
    run = _run(tiny, tmp_path, [])
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert sorted(confirmed) == [1, 2]
    for result in confirmed.values():
        assert result.stopped_by == "allowance spent"
        conf = result.confirmation
        assert conf is not None and conf.reproduced and "not told apart" in conf.note
    assert script.now <= CONFIRM_ALLOWANCE_S
    ranked = rank_candidates(tuple(confirmed.get(i, c) for i, c in enumerate(cands)))
    assert set(ranked.order) == {0, 1, 2}


def test_a_later_round_gets_only_what_the_first_left(tiny, tmp_path, monkeypatch) -> None:
    """After re-ranking, a newcomer is timed within the allowance the first round left, not a fresh one."""
    allowances = _allowances(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0, "d": 18.0})
    cands = (BASELINE.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 31.0),
             _screened("d", 35.0))
    run = _run(tiny, tmp_path, [])
    run.confirm_top = 3
    first = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    spent = run._confirm_spent_s
    # d was timed slower by its screen; say the re-ranking brings it up (as a leader found slower would).
    cands = tuple(first.get(i, c) for i, c in enumerate(cands))
    second = run.confirm(cands, (4, 1, 2, 3), timeout_s=60)
    assert sorted(second) == [4]
    assert allowances == [pytest.approx(CONFIRM_ALLOWANCE_S), pytest.approx(CONFIRM_ALLOWANCE_S - spent)]
    assert run._confirm_spent_s <= CONFIRM_ALLOWANCE_S


def test_a_spent_allowance_confirms_no_newcomer(tiny, tmp_path, monkeypatch) -> None:
    """Once tied leaders have spent the allowance, a later round times nothing and says why; the newcomer keeps
    its screen figure and is not tried again."""
    allowances = _allowances(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 20.0, "c": 20.0, "d": 18.0})
    cands = (BASELINE.as_candidate(), _screened("a", 20.5), _screened("b", 20.6), _screened("c", 20.7),
             _screened("d", 35.0))
    events: list[Event] = []
    run = _run(tiny, tmp_path, events)
    run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    run._confirm_spent_s = CONFIRM_ALLOWANCE_S - CONFIRM_LEADER_MIN_S / 2  # as tied leaders leave it, or nearly
    assert run.confirm(cands, (4, 1, 2, 3), timeout_s=60) == {}
    assert len(allowances) == 1  # the second round started no worker
    assert any("not confirmed with the full method (d)" in e.message for e in events)
    assert run.confirm(cands, (4, 1, 2, 3), timeout_s=60) == {} and 4 in run._confirm_tried


def test_a_budget_with_little_left_confirms_fewer_leaders_and_records_the_cut(tiny, tmp_path, monkeypatch) -> None:
    """Under --budget the allowance is also what the budget leaves after the workers' start: too little for three
    leaders confirms the first (in rank order) and records the rest as cut."""
    allowances = _allowances(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0})
    now = [0.0]
    budget = Budget(60.0, clock=lambda: now[0])
    now[0] = budget.left() - CONFIRM_START_S - 1.5 * CONFIRM_LEADER_MIN_S  # leaves 1.5 leaders' worth
    cands = (BASELINE.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 31.0))
    run = _run(tiny, tmp_path, [], budget=budget)
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert sorted(confirmed) == [1]
    assert allowances == [pytest.approx(1.5 * CONFIRM_LEADER_MIN_S)]
    assert len(budget.cut) == 1 and budget.cut[0].startswith("2 leaders not confirmed with the full method (b, c)")


def test_only_the_leaders_whose_workers_fit_in_memory_together_are_confirmed(tiny, tmp_path, monkeypatch) -> None:
    """Three torch leaders of ~1 GiB each with 3 GiB free: two are timed in turns, the third keeps its screen
    figure and the log says why."""
    import dataclasses

    import planner.hardware.memory_limits as memory_limits
    from planner.hardware.memory_limits import PlanLimits

    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0})
    monkeypatch.setattr(memory_limits, "current_limits",
                        lambda: PlanLimits(4 << 30, "cgroup v1", 3 << 30, 2))
    gib = 1 << 30
    cands = (BASELINE.as_candidate(), *(dataclasses.replace(_screened(label, p50), peak_memory_bytes=gib)
                                        for label, p50 in (("a", 20.5), ("b", 25.5), ("c", 31.0))))
    events: list[Event] = []
    confirmed = _run(tiny, tmp_path, events).confirm(cands, rank_candidates(cands).order, timeout_s=60)
    fit = memory_limits.max_concurrent_workers(memory_limits.current_limits(), gib)
    assert fit == 2 and sorted(confirmed) == [1, 2]
    said = " ".join(e.message for e in events)
    assert "not confirmed with the full method (c)" in said and f"only {fit} fit at once" in said
