"""Roofline verdicts against fake ceilings (peak 1e11 FLOP/s, 1e10 B/s, ridge 10 FLOP/B)."""

from __future__ import annotations

import pytest
import torch
from analysis_models import CleanNet

from planner.analysis import (
    Bound,
    CeilingsLike,
    analyze_layers,
    classify,
    layer_verdicts,
    model_verdict,
)


def test_fake_ceilings_fit_the_protocol(ceilings) -> None:
    assert isinstance(ceilings, CeilingsLike)
    assert ceilings.ridge_point() == 10.0


def test_high_intensity_at_the_compute_floor_is_compute_bound(ceilings) -> None:
    # intensity 100 FLOP/B; 1e9 FLOPs take 10 ms at 1e11 FLOP/s
    v = classify(1e9, 1e7, 0.01, ceilings)
    assert v.bound == Bound.COMPUTE
    assert v.intensity == pytest.approx(100.0)
    assert v.compute_time_s == pytest.approx(0.01)
    assert v.memory_time_s == pytest.approx(0.001)
    assert v.efficiency == pytest.approx(1.0)
    assert v.attained_flops_per_s == pytest.approx(1e11)
    assert "= 100 FLOP/B vs ridge 10 FLOP/B" in v.explanation


def test_low_intensity_is_memory_bound(ceilings) -> None:
    # intensity 1 FLOP/B; 1e8 bytes take 10 ms at 1e10 B/s
    v = classify(1e8, 1e8, 0.02, ceilings)
    assert v.bound == Bound.MEMORY
    assert v.memory_time_s == pytest.approx(0.01)
    assert v.efficiency == pytest.approx(0.5)


def test_time_far_above_both_floors_with_evidence_is_overhead_bound(ceilings) -> None:
    evidence = "400 layer calls averaging 25 us each"
    v = classify(1e9, 1e7, 100 * 0.01, ceilings, overhead_evidence=evidence)
    assert v.bound == Bound.OVERHEAD
    assert v.efficiency == pytest.approx(0.01)
    assert "100x" in v.explanation and "throughput-limited" in v.explanation and evidence in v.explanation
    assert v.overhead_evidence == evidence
    # Under the overhead factor the roofline side still decides.
    assert classify(1e9, 1e7, 5 * 0.01, ceilings, overhead_evidence=evidence).bound == Bound.COMPUTE
    assert classify(1e9, 1e7, 5 * 0.01, ceilings, overhead_factor=4,
                    overhead_evidence=evidence).bound == Bound.OVERHEAD


def test_a_slow_sample_without_evidence_is_not_overhead_bound(ceilings) -> None:
    v = classify(1e9, 1e7, 100 * 0.01, ceilings)
    assert v.bound == Bound.COMPUTE
    assert not v.stable and "no sign of overhead" in v.unstable_reason
    assert v.efficiency is None and "unstable" in v.explanation


def test_precision_picks_its_peak(ceilings) -> None:
    v = classify(1e9, 1e7, 0.01, ceilings, precision="fp16")
    assert v.ridge_point == 40.0
    assert v.compute_time_s == pytest.approx(0.0025)


def test_untimed_work_is_classified_by_intensity_alone(ceilings) -> None:
    v = classify(1e8, 1e8, None, ceilings)
    assert v.bound == Bound.MEMORY and v.efficiency is None and v.measured_time_s is None
    assert "not timed" in v.explanation


def test_model_and_layer_verdicts_use_the_report(ceilings) -> None:
    x = torch.randn(1, 3, 32, 32)
    report = analyze_layers(CleanNet().eval(), x, repeats=2, threads=1)
    mv = model_verdict(report, 0.5, ceilings)
    assert mv.flops == report.total_flops
    assert mv.bytes_moved == report.total_bytes_moved
    assert mv.measured_time_s == 0.5
    verdicts = layer_verdicts(report, ceilings)
    assert [lv.layer.key for lv in verdicts] == [n.key for n in report.layers]
    assert all(lv.verdict.measured_time_s == pytest.approx(lv.layer.time_ms / 1e3) for lv in verdicts)
    untimed = analyze_layers(CleanNet().eval(), x, measure_time=False)
    assert layer_verdicts(untimed, ceilings) == []
