"""A quick plan's confirmation times the baseline in the leaders' turns, so each confirmed speedup is a ratio of two
medians measured side by side, and times again a candidate its screen dropped close to the best, so a burst of load
during one screen does not decide its place.

The interleaved workers are scripted (tests/measure/scripted_turns.py): each job answers with latencies around a median
the test gives, on a fake clock; the baseline's profile figure is what the test writes into its record.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_turns import install

from planner.codec import to_data
from planner.events import CancelToken, Event
from planner.measure import interleave
from planner.pipeline.candidates import CandidateRun
from planner.plugins import CandidateSpec
from planner.results import Baseline, CandidateResult, PlanResults, Status
from planner.results.ranking import rank_candidates
from planner.results.rows import speedup_of
from planner.results.values import LatencyStats, ModelSummary


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=20, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.01)


def _baseline(p50: float, *, invalid: str = "") -> Baseline:
    """The profile's record: its figure `p50`, and the spec a worker opens to time it again (label "base")."""
    return Baseline(model=ModelSummary("tiny", "demo:tiny", "torch", 1, 1), input_shape=(1, 3, 8, 8),
                    latency_ms=_latency(p50), spec=to_data(CandidateSpec(plugin="test.scripted", label="base")),
                    invalid=invalid)


def _screened(label: str, p50: float, *, dropped: str = "") -> CandidateResult:
    spec = CandidateSpec(plugin="test.scripted", label=label)
    return CandidateResult(plugin=spec.plugin, label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=_latency(p50), spec=to_data(spec), wall_s=3.0,
                           stopped_by="dropped" if dropped else "time cap", dropped=dropped)


class _Sink:
    def warn(self, message: str) -> None:
        """Warnings are not what these tests read."""


def _run(tiny, tmp_path: Path, baseline: Baseline, events: list[Event]) -> CandidateRun:
    return CandidateRun(hw=None, model=tiny, baseline=baseline, reference=[], workdir=tmp_path,  # type: ignore[arg-type]
                        quick=True, val_data=None, accuracy_budget=None, on_event=events.append,
                        cancel=CancelToken(), sink=_Sink())  # type: ignore[arg-type]


def _jobs_seen(monkeypatch) -> list[list[str]]:
    """The labels of every job list confirm hands the interleaved timing."""
    seen: list[list[str]] = []
    real = interleave.time_interleaved

    def spy(jobs, **kwargs):
        seen.append([j.spec.label for j in jobs])
        return real(jobs, **kwargs)

    monkeypatch.setattr(interleave, "time_interleaved", spy)
    return seen


def test_the_baseline_takes_turns_and_the_speedups_are_side_by_side(tiny, tmp_path, monkeypatch) -> None:
    """The profile read the baseline at 100 ms while the machine was busy; beside the leaders it runs 60 ms. The
    leaders' speedups are over the 60 ms timed with them (3x for a 20 ms leader, not the 5x the profile's figure
    gives), each confirmation records the baseline's figure and says so, and the baseline's own record is not
    touched: the report's Baseline section still reads the profile."""
    seen = _jobs_seen(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0, "base": 60.0})
    baseline = _baseline(100.0)
    cands = (baseline.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 31.0))
    events: list[Event] = []
    run = _run(tiny, tmp_path, baseline, events)
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert seen == [["a", "b", "c", "base"]] and sorted(confirmed) == [1, 2, 3]
    for i, median in ((1, 20.0), (2, 26.0), (3, 30.0)):
        conf = confirmed[i].confirmation
        assert conf is not None and conf.baseline_p50_ms == pytest.approx(60.0, rel=0.05)
        assert confirmed[i].speedup == pytest.approx(conf.baseline_p50_ms / confirmed[i].p50)
        assert confirmed[i].speedup == pytest.approx(60.0 / median, rel=0.1)
        assert conf.interleaved == 3 and confirmed[i].stopped_by == "told apart"
        assert "side by side" in conf.note and "its profile 100 ms" in conf.note
    assert run.baseline.latency_ms.p50_ms == 100.0
    assert "side by side" in events[0].message


def test_an_invalid_baseline_timed_beside_the_leaders_gives_them_a_speedup(tiny, tmp_path, monkeypatch) -> None:
    """A baseline whose profile disagreed with itself gets no speedup over that figure, but its re-time in the same
    turns is a measurement of its own: the confirmed leaders carry a side-by-side speedup, every table's rows read
    it, the note says why, and a row only screened still shows none."""
    install(monkeypatch, {"a": 20.0, "b": 30.0, "base": 60.0})
    baseline = _baseline(100.0, invalid="p50 100 ms against 9 ms in the batch sweep at batch 1, 11x apart")
    cands = (baseline.as_candidate(), _screened("a", 20.5), _screened("b", 31.0), _screened("z", 80.0))
    run = _run(tiny, tmp_path, baseline, [])
    run.confirm_top = 2
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    results = PlanResults(baseline=baseline, candidates=tuple(confirmed.get(i, c) for i, c in enumerate(cands)))
    lead = results.candidates[1]
    assert lead.confirmation is not None and "profile's own timing is invalid" in lead.confirmation.note
    assert speedup_of(results, lead) == pytest.approx(3.0, rel=0.1)
    assert speedup_of(results, results.candidates[3]) is None


def test_no_room_in_the_allowance_confirms_the_leaders_alone(tiny, tmp_path, monkeypatch) -> None:
    """With room for three leaders' least turns and no more, the leaders come first: the baseline is not timed
    again, the log says so, and the speedups stay over its profile's figure."""
    seen = _jobs_seen(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0, "base": 60.0})
    baseline = _baseline(100.0)
    cands = (baseline.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 31.0))
    events: list[Event] = []
    run = _run(tiny, tmp_path, baseline, events)
    run.confirm_allowance_s = 7.0  # three leaders' CONFIRM_LEADER_MIN_S, and half of a fourth
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert seen == [["a", "b", "c"]]
    assert all(c.confirmation is not None and c.confirmation.baseline_p50_ms is None for c in confirmed.values())
    assert confirmed[1].speedup == pytest.approx(100.0 / confirmed[1].p50)
    assert any("not timed again beside the leaders" in e.message for e in events)


def test_a_candidate_dropped_close_to_the_best_is_timed_again_with_the_leaders(tiny, tmp_path, monkeypatch) -> None:
    """A screen that fell on a burst of load dropped d at 30 ms, within 1.5x of the best's 20.5 ms but below the top
    three; timed in turns it
    runs 18 ms, the fastest, and is ranked first on that figure with a note that says it was revisited. e, dropped at
    40 ms (twice the best), keeps its drop and its screen figure."""
    seen = _jobs_seen(monkeypatch)
    install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0, "d": 18.0, "base": 60.0})
    baseline = _baseline(100.0)
    drop = "clearly slower than a (20.5 ms): after 6 samples its median's 95% interval lay wholly above 20.7 ms"
    cands = (baseline.as_candidate(), _screened("a", 20.5), _screened("b", 25.5), _screened("c", 29.0),
             _screened("d", 30.0, dropped=drop), _screened("e", 40.0, dropped=drop))
    run = _run(tiny, tmp_path, baseline, [])
    confirmed = run.confirm(cands, rank_candidates(cands).order, timeout_s=60)
    assert seen == [["a", "b", "c", "d", "base"]]  # the top three by screen, the revisited one, then the baseline
    d = confirmed[4]
    assert d.confirmation is not None and d.confirmation.revisited and not d.dropped
    assert "stopped early as clearly slower at 30 ms" in d.confirmation.note
    assert not any(c.confirmation.revisited for i, c in confirmed.items() if i != 4 and c.confirmation)
    assert 5 not in confirmed and 5 not in run._confirm_tried
    ranked = rank_candidates(tuple(confirmed.get(i, c) for i, c in enumerate(cands)))
    assert ranked.order[0] == 4
    # Tried once: a later round does not time it again.
    assert run.confirm(tuple(confirmed.get(i, c) for i, c in enumerate(cands)), ranked.order, timeout_s=60) == {}
