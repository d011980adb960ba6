"""A baseline whose median disagrees with its own batch sweep is timed again, and where it still does, it is marked
invalid with the likeliest cause, and no speedup is worked out against it (in the plan, the rows and the report)."""

from __future__ import annotations

import dataclasses

import pytest

from planner.hardware.ceilings import Ceilings
from planner.hardware.detect import detect
from planner.measure.stats import compute_stats
from planner.pipeline.baseline import load_cause, profile_baseline, sweep_disagreement
from planner.report import render_markdown
from planner.results import CandidateResult, PlanResults, Ranking, RunStatus, Status
from planner.results.audit import MeasurementAudit
from planner.results.rows import candidate_rows
from planner.results.values import ThroughputPoint

BUSY = MeasurementAudit(threads_used=2, usable_cores=2, other_load_mean_cores=1.9)


def _timed(p50_ms: float, sweep_ms: float, audit: MeasurementAudit | None = BUSY) -> CandidateResult:
    """A baseline's measurement: its main timing's median and its batch-1 sweep point."""
    return CandidateResult(plugin="torch.eager", label="torch eager fp32 (cpu)", config={}, precision="fp32",
                           status=Status.OK, latency_ms=compute_stats([p50_ms] * 20),
                           throughput=(ThroughputPoint(1, sweep_ms, 1e3 / sweep_ms, None),), audit=audit)


def test_a_median_far_from_its_own_sweep_is_named_with_its_cause() -> None:
    assert sweep_disagreement(_timed(0.11, 0.10), 1) == ""
    words = sweep_disagreement(_timed(60.0, 0.101), 1)
    assert words == "p50 60 ms over 20 samples against 0.101 ms in the batch sweep at batch 1, 594x apart"
    assert "2 threads while other work held 1.9 of the 2 usable cores" in load_cause(_timed(60.0, 0.101))
    assert "idle machine" in load_cause(_timed(60.0, 0.101, MeasurementAudit(other_load_mean_cores=0.5)))


@pytest.fixture
def timings(monkeypatch):
    """measure() replaced by a script of results; returns the list of results it still has to give."""
    script: list[CandidateResult] = []

    def fake_measure(job, *, timeout_s=600.0):
        return script.pop(0), None

    monkeypatch.setattr("planner.measure.evaluate.measure", fake_measure)
    monkeypatch.setattr("planner.measure.energy.prepare_source", lambda device, quick=False: None)
    return script


CEILINGS = Ceilings(peak_flops={"fp32": 1e11}, bandwidth_bytes_per_s=1e10, source="measured")


def test_a_busy_spell_on_one_timing_passes_on_the_second(tiny, timings) -> None:
    timings += [_timed(60.0, 0.101), _timed(0.11, 0.10)]
    events = []
    base, _ = profile_baseline(tiny, quick=True, hw=detect(), ceilings=CEILINGS, on_event=events.append)
    assert not timings and base.invalid == "" and base.latency_ms.p50_ms == pytest.approx(0.11)
    assert any("timing it again" in e.message for e in events)


def test_a_baseline_that_disagrees_twice_is_invalid_and_no_speedup_is_made(tiny, timings) -> None:
    timings += [_timed(60.0, 0.101), _timed(40.0, 0.1)]
    base, _ = profile_baseline(tiny, quick=True, hw=detect(), ceilings=CEILINGS)
    assert base.invalid.startswith("p50 40 ms over 20 samples against 0.1 ms") and "twice" in base.invalid
    assert "threads that outnumber the free cores" in base.invalid
    assert base.speedup_of(0.05) is None and dataclasses.replace(base, invalid="").speedup_of(0.05) == 800
    fast = dataclasses.replace(_timed(0.05, 0.05), speedup=None)
    results = PlanResults(status=RunStatus.OK, baseline=base, candidates=(base.as_candidate(), fast),
                          ranking=Ranking(order=(1, 0)))
    assert [row.speedup for row in candidate_rows(results)] == [None, None]
    summary = render_markdown(results).split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "That timing is invalid: p50 40 ms" in summary
    assert "no speedup is worked out, because the baseline's own timing is invalid" in summary
    assert "x the baseline's speed" not in summary
