"""Seed 000's bottleneck classes from roofline verdicts, with causes built from the numbers."""

from __future__ import annotations

from planner.analysis import (
    BottleneckClass,
    LayerReport,
    LayerStats,
    classify_bottlenecks,
)


def _layer(name: str, index: int, flops: int, bytes_moved: int, time_ms: float | None) -> LayerStats:
    return LayerStats(name=name, type="Conv2d", call=1, index=index, input_shapes=((1, 8, 8, 8),),
                      output_shape=(1, 8, 8, 8), params=0, flops=flops, bytes_moved=bytes_moved,
                      activation_bytes=0, time_ms=time_ms,
                      time_share=None if time_ms is None else time_ms / 100.0)


def _report(*layers: LayerStats) -> LayerReport:
    return LayerReport(layers=layers, total_flops=sum(n.flops for n in layers), total_params=0,
                       peak_activation_bytes=0, time_method="test", forward_time_ms=100.0)


def test_layers_fall_into_the_three_classes(ceilings) -> None:
    report = _report(
        _layer("alpha", 0, flops=10**9, bytes_moved=10**7, time_ms=20.0),    # compute floor 10 ms
        _layer("beta", 1, flops=10**8, bytes_moved=10**8, time_ms=15.0),     # memory floor 10 ms
        _layer("gamma", 2, flops=10**5, bytes_moved=10**4, time_ms=0.03),    # floor 1 us: 30x, a tiny call
        _layer("delta", 3, flops=2 * 10**9, bytes_moved=10**7, time_ms=30.0),  # compute floor 20 ms
    )
    summary = classify_bottlenecks(report, ceilings, top=3)
    assert summary.ranked_by == "measured time"
    compute = summary.group(BottleneckClass.COMPUTE_BOUND)
    assert [b.layer for b in compute.top] == ["delta", "alpha"]
    assert compute.time_ms == 50.0
    memory = summary.group("memory-bound")
    assert [b.layer for b in memory.top] == ["beta"]
    assert "95.4 MiB" in memory.top[0].cause and "ridge 10 FLOP/B" in memory.top[0].cause
    throughput = summary.group(BottleneckClass.THROUGHPUT_LIMITED)
    assert [b.layer for b in throughput.top] == ["gamma"]
    assert "30x" in throughput.top[0].cause and "tiny" in throughput.top[0].cause


def test_a_slow_long_layer_is_not_called_throughput_limited(ceilings) -> None:
    # 500x its floor but 5 ms long: a slow sample looks like this too, so no overhead without evidence.
    report = _report(_layer("gamma", 0, flops=10**6, bytes_moved=10**5, time_ms=5.0))
    summary = classify_bottlenecks(report, ceilings)
    assert summary.group(BottleneckClass.THROUGHPUT_LIMITED).layer_count == 0
    entry = summary.group(BottleneckClass.COMPUTE_BOUND).top[0]
    assert "unstable" in entry.cause and "no sign of overhead" in entry.cause


def test_top_limits_each_group(ceilings) -> None:
    layers = [_layer(f"l{i}", i, flops=10**9, bytes_moved=10**7, time_ms=10.0 + i) for i in range(5)]
    summary = classify_bottlenecks(_report(*layers), ceilings, top=2)
    group = summary.group(BottleneckClass.COMPUTE_BOUND)
    assert group.layer_count == 5
    assert [b.layer for b in group.top] == ["l4", "l3"]


def test_untimed_report_ranks_by_roofline_floor(ceilings) -> None:
    report = _report(_layer("small", 0, flops=10**8, bytes_moved=10**6, time_ms=None),
                     _layer("big", 1, flops=10**9, bytes_moved=10**7, time_ms=None))
    summary = classify_bottlenecks(report, ceilings)
    assert summary.ranked_by.startswith("roofline floor")
    assert [b.layer for b in summary.group("compute-bound").top] == ["big", "small"]
    assert summary.group("throughput-limited").layer_count == 0
