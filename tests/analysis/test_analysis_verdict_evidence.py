"""Verdicts that need evidence: fabricated profiles against round ceilings (1e11 FLOP/s, 1e10 B/s)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.analysis import Bound, LayerReport, LayerStats, classify, layer_verdicts, model_verdict


@dataclass(frozen=True)
class _Stats:
    """The parts of LatencyStats a verdict reads."""

    samples: int
    unstable: bool = False
    iqr_over_median: float = 0.02


def _layer(i: int, flops: int, bytes_moved: int, time_ms: float) -> LayerStats:
    return LayerStats(name=f"conv{i}", type="Conv2d", call=1, index=i, input_shapes=((1, 64, 56, 56),),
                      output_shape=(1, 64, 56, 56), params=0, flops=flops, bytes_moved=bytes_moved,
                      activation_bytes=0, time_ms=time_ms, time_share=None)


def _report(*layers: LayerStats) -> LayerReport:
    return LayerReport(layers=layers, total_flops=sum(n.flops for n in layers), total_params=0,
                       peak_activation_bytes=0, time_method="test", forward_time_ms=None)


def _resnet_like() -> LayerReport:
    """A 3.6 GFLOP conv model in 20 long layers (its roofline floor is 36 ms at 1e11 FLOP/s)."""
    return _report(*(_layer(i, 180_000_000, 2_000_000, 30.0) for i in range(20)))


def test_a_slow_sample_of_a_conv_model_is_not_overhead_bound(ceilings) -> None:
    # 646 ms on a busy machine: 18x the floor, but 20 ops of ~32 ms each are no sign of overhead.
    v = model_verdict(_resnet_like(), 0.646, ceilings, stats=_Stats(samples=30))
    assert v.bound == Bound.COMPUTE
    assert not v.stable
    assert "no sign of overhead" in v.unstable_reason and "idle machine" in v.unstable_reason
    assert v.efficiency is None  # a slowed sample's efficiency is not a fact


def test_the_same_model_at_its_normal_time_is_compute_bound_and_stable(ceilings) -> None:
    v = model_verdict(_resnet_like(), 0.060, ceilings, stats=_Stats(samples=30))
    assert v.bound == Bound.COMPUTE and v.stable and v.unstable_reason == ""
    assert 0 < (v.efficiency or 0) <= 1


def test_many_small_ops_are_evidence_of_overhead(ceilings) -> None:
    # 400 calls of 20 us each, each doing almost nothing: dispatch sets the time.
    report = _report(*(_layer(i, 2_000, 2_000, 0.02) for i in range(400)))
    v = model_verdict(report, 0.008, ceilings, stats=_Stats(samples=200))
    assert v.bound == Bound.OVERHEAD and v.stable
    assert "400 layer calls" in v.overhead_evidence
    assert "calls under" in v.overhead_evidence


def test_gpu_idle_gaps_are_evidence_of_overhead(ceilings) -> None:
    v = model_verdict(_resnet_like(), 0.646, ceilings, stats=_Stats(samples=30), gpu_idle_share=0.6)
    assert v.bound == Bound.OVERHEAD and "GPU idle" in v.overhead_evidence


def test_too_few_samples_or_wide_spread_mark_the_verdict_unstable(ceilings) -> None:
    few = model_verdict(_resnet_like(), 0.060, ceilings, stats=_Stats(samples=4))
    assert not few.stable and "only 4 timed samples" in few.unstable_reason
    spread = model_verdict(_resnet_like(), 0.060, ceilings, stats=_Stats(samples=50, unstable=True,
                                                                          iqr_over_median=0.3))
    assert not spread.stable and "spread too widely" in spread.unstable_reason
    busy = model_verdict(_resnet_like(), 0.060, ceilings, stats=_Stats(samples=50),
                         interference="another process used 80% of a core during this run")
    assert not busy.stable and "another process" in busy.unstable_reason
    assert "[unstable:" in busy.explanation


def test_layers_inherit_the_run_instability(ceilings) -> None:
    verdicts = layer_verdicts(_resnet_like(), ceilings, unstable_reason="only 4 timed samples")
    assert all(not lv.verdict.stable for lv in verdicts)


def test_beating_the_ceiling_never_shows_an_efficiency_above_100_percent(ceilings) -> None:
    # 3.6 GFLOP in 24.8 ms = 145 GFLOP/s against a 100 GFLOP/s ceiling (ratio 1.46).
    v = classify(3.6e9, 1e7, 0.0248, ceilings)
    assert v.efficiency is not None and v.efficiency <= 1.0
    assert "146%" not in v.explanation and "145%" not in v.explanation
    assert "measured above the cached ceiling" in v.ceiling_warning
    assert "planner detect --ceilings --refresh" in v.explanation
    # The compute floor shown is never longer than the measured time.
    assert v.compute_time_s <= v.measured_time_s


def test_moving_bytes_faster_than_dram_is_explained_not_a_percentage(ceilings) -> None:
    v = classify(1e6, 1e8, 0.005, ceilings)  # 20 GB/s against 10 GB/s: the data sat in cache
    assert v.memory_time_s <= 0.005 and (v.efficiency or 0) <= 1.0
    assert "cache" in v.ceiling_warning
