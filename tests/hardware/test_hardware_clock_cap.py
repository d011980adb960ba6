"""A clock that never settles cannot hold a plan up: `best_rate` gives up past its time cap with a clear error, and
the ceilings fall back to their labelled estimate, which every view then warns about.

The clocks here are fakes that report made-up seconds; nothing is timed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hardware_profiles import two_core_x86

import planner.hardware.ceilings as ceilings_module
from planner.codec import to_data
from planner.hardware.ceiling_notes import warnings
from planner.hardware.ceilings import measure_ceilings
from planner.hardware.clock import MAX_RATE_SECONDS, ClockError, best_rate
from planner.hardware.load import LoadReading
from planner.report.data import ReportData
from planner.report.sections import hardware


class _SlowClock:
    """A RunClock whose every reading is `seconds`, counting the readings; it never calls the work."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.readings = 0

    def __call__(self, run, iterations: int) -> float:
        self.readings += 1
        return self.seconds


def test_a_clock_that_never_settles_stops_at_the_cap() -> None:
    clock = _SlowClock(50.0)
    with pytest.raises(ClockError, match=r"timing did not settle: 150 s spent past the 120 s cap"):
        best_rate(lambda: None, 1e9, 5, 0.1, clock, max_total_s=120.0)
    assert clock.readings == 3  # the warm-up and two samples, not the five asked for


def test_the_cap_also_counts_wall_time_the_clock_does_not_report() -> None:
    """A device clock reports only device time: the host's own waiting counts too."""
    now = iter([0.0, 40.0, 80.0, 130.0, 170.0])
    with pytest.raises(ClockError, match="past the 100 s cap"):
        best_rate(lambda: None, 1e9, 5, 0.0, _SlowClock(0.01), max_total_s=100.0, wall=lambda: next(now))


@pytest.mark.parametrize("reading", [0.0, -1.0, math.nan, math.inf])
def test_an_impossible_sample_reading_is_an_error_not_a_rate(reading) -> None:
    readings = iter([0.01, reading])
    with pytest.raises(ClockError, match="it cannot time this work"):
        best_rate(lambda: None, 1e9, 3, 0.0, lambda run, n: next(readings))


def test_a_measurement_inside_the_cap_is_unchanged() -> None:
    rate, info = best_rate(lambda: None, 1e9, 3, 0.0, _SlowClock(2.0))
    assert rate == pytest.approx(0.5e9) and info["repeats"] == 3 and MAX_RATE_SECONDS == 120.0


class _Idle:
    """A load sampler that always reads an idle machine."""

    def __call__(self) -> _Idle:
        return self

    def start(self) -> _Idle:
        return self

    def stop(self) -> LoadReading:
        return LoadReading(1.0, 5, 0.0, 0.0, 1.0, "a script")


def test_ceilings_that_cannot_be_timed_are_a_labelled_estimate_and_the_report_says_so(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    """torch builds the GEMMs, but the clock never settles: the planner goes on with an estimate, cached nowhere."""
    monkeypatch.setattr(ceilings_module, "host_clock", _SlowClock(1000.0))
    monkeypatch.setattr(ceilings_module, "LoadSampler", _Idle())
    hw = two_core_x86()
    got = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    assert got.source.startswith("estimate: ") and not got.is_measured
    assert "ClockError: timing did not settle" in got.details["measurement_error"]
    assert "5 GB/s assumed (the clock could not time a copy" in got.source
    assert got.peak("fp32") > 0 and got.bandwidth_bytes_per_s == 5e9
    assert not list(tmp_path.glob("*.json"))
    said = warnings(got.details)
    assert said and said[0].startswith("the ceilings could not be measured on this machine (ClockError")
    out = "\n".join(hardware.ceilings_lines(ReportData({"ceilings": to_data(got)})))
    assert "Source: **estimate: " in out and "Warning: the ceilings could not be measured on this machine" in out
    assert "measurement_error" not in out
