"""The report never prints an efficiency above 100% as a fact, and says how the ceilings were measured."""

from __future__ import annotations

from report_fixtures import whole

from planner.report.data import ReportData
from planner.report.sections import bottlenecks, hardware


def _text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_an_old_efficiency_above_100_percent_becomes_a_warning() -> None:
    # As an older results.json recorded it: 146% of the roofline bound, floor longer than the run.
    data = ReportData(whole({"baseline": {"bottleneck": {
        "bound": "compute", "attained_flops_per_s": 145e9, "efficiency": 1.46,
        "compute_time_s": 0.0361, "memory_time_s": 0.001, "measured_time_s": 0.0248}}}))
    out = _text(bottlenecks.render(data))
    assert "146%" not in out
    assert "measured above the cached ceiling" in out and "planner detect --ceilings --refresh" in out
    assert "compute floor 36" not in out  # capped at the measured time


def test_an_unstable_verdict_says_why() -> None:
    data = ReportData(whole({"baseline": {"bottleneck": {
        "bound": "compute", "stable": False, "measured_time_s": 0.646, "compute_time_s": 0.036,
        "memory_time_s": 0.001,
        "unstable_reason": "measured 18x the larger floor with no sign of overhead (few, long calls)"}}}))
    out = _text(bottlenecks.render(data))
    assert "compute-bound (unstable)" in out and "no sign of overhead" in out


def test_ceilings_say_when_and_how_they_were_measured() -> None:
    details = {"timestamp": "2026-11-23T10:00:00+00:00", "mode": "quick", "repeats": 3,
               "fp32_gemm": {"spread": 0.04}, "measured_while": "busy", "other_cores": [0.8, 0.9, 0.85],
               "attempts": 3, "busy_note": "other processes used 0.85 cores during each of 3 attempts",
               "fp32_raised": {"from": 99.7e9, "to": 145e9, "where": "the whole model (resnet)"}}
    data = ReportData(whole({"ceilings": {"peak_flops": {"fp32": 145e9}, "bandwidth_bytes_per_s": 2e10,
                                    "source": "measured", "device": "cpu", "details": details}}))
    out = _text(hardware.ceilings_lines(data))
    assert "measured 2026-11-23T10:00:00+00:00" in out and "best of 3 repeats" in out
    assert "machine busy" in out and "Warning: other processes used 0.85 cores" in out
    assert "attained by the whole model (resnet)" in out


def test_the_compute_share_of_an_old_report_never_exceeds_the_peak() -> None:
    from planner.report.sections import baseline

    data = ReportData(whole({"ceilings": {"peak_flops": {"fp32": 99.7e9}, "bandwidth_bytes_per_s": 2e10},
                       "baseline": {"flops_per_sample": 3.6e9, "latency_ms": {"p50_ms": 24.8, "samples": 50},
                                    "inputs": [{"name": "x", "shape": [1, 3, 224, 224], "dtype": "float32"}]}}))
    out = _text(baseline.render(data))
    assert "Attained by one call" in out
    assert "145%" not in out and "measured above the cached ceiling" in out
