"""Ranking for a minimum throughput: the most rows/s at each candidate's best batch and stream count."""

from __future__ import annotations

from planner.measure.stats import compute_stats
from planner.results import CandidateResult, Status, rank_candidates
from planner.results.values import StreamPoint, ThroughputPoint

STATED_RATE = {"min_throughput": 500, "latency_ms": 50, "latency_percentile": "p95",
               "sources": {"min_throughput": "flag", "latency_ms": "default for Server"}}


def _cand(label: str, p50: float, sweep: dict[int, float], streams: tuple[StreamPoint, ...] = ()) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=compute_stats([p50] * 20),
                           throughput=tuple(ThroughputPoint(b, p50, r, None) for b, r in sweep.items()),
                           streams=streams)


def test_parallel_streams_can_win_the_throughput_ranking() -> None:
    fast_alone = _cand("fast alone", 1.0, {1: 1000.0, 8: 1500.0})
    served = _cand("openvino throughput", 2.0, {1: 500.0, 8: 900.0},
                   (StreamPoint(8, 1, 900.0, "as configured"), StreamPoint(8, 4, 2400.0, "OpenVINO THROUGHPUT hint")))
    ranking = rank_candidates([fast_alone, served], STATED_RATE)
    assert ranking.order == (1, 0)
    # The ranking says what each leader needs to reach its figure.
    assert ranking.by.startswith("best throughput at each candidate's best batch and stream count")
    assert "openvino throughput: 2,400 samples/s at batch 8, 4 streams" in ranking.by
    assert "fast alone: 1,500 samples/s at batch 8, 1 stream" in ranking.by


def test_a_stated_latency_target_keeps_the_latency_order() -> None:
    fast_alone = _cand("fast alone", 1.0, {1: 1000.0})
    served = _cand("served", 2.0, {1: 500.0}, (StreamPoint(1, 4, 4000.0, "streams"),))
    stated_both = {**STATED_RATE, "sources": {"min_throughput": "flag", "latency_ms": "flag"}}
    assert rank_candidates([fast_alone, served], stated_both).order == (0, 1)
    assert rank_candidates([fast_alone, served], {}).order == (0, 1)


def test_peak_rate_prefers_fewer_streams_and_smaller_batches_on_a_tie() -> None:
    cand = _cand("c", 1.0, {4: 800.0}, (StreamPoint(4, 1, 800.0, "one"), StreamPoint(4, 2, 800.0, "two")))
    peak = cand.peak_rate()
    assert peak is not None and (peak.batch, peak.streams) == (4, 1)
    assert _cand("none", 1.0, {}).peak_rate() is None
