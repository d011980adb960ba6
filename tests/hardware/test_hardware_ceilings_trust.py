"""Ceilings that cannot be poisoned: best of repeats, re-measured while busy, beaten ceilings invalidated.

Everything here is injected (a fake clock, a fake load sampler, a fake measurement), so nothing is timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hardware_profiles import two_core_x86, with_cpu

import planner.hardware.ceilings as ceilings_module
from planner.hardware.ceiling_notes import measurement_note
from planner.hardware.ceilings import (
    Ceilings,
    cache_key,
    cache_path,
    measure_ceilings,
    measure_until_idle,
    raise_exceeded,
)
from planner.hardware.clock import best_rate, event_clock
from planner.hardware.load import LoadReading

GFLOP = 1e9


def _ceilings(fp32: float, bandwidth: float = 20e9, **details) -> Ceilings:
    return Ceilings(peak_flops={"fp32": fp32}, bandwidth_bytes_per_s=bandwidth, source="measured",
                    details={"timestamp": "2026-01-01T00:00:00+00:00", "repeats": 3, "mode": "quick", **details})


class _FakeSampler:
    """Stands in for the load sampler: reports other processes' load from a script, one figure per measurement."""

    def __init__(self, loads: list[float | None]) -> None:
        self.loads = loads
        self.running = False

    def __call__(self) -> _FakeSampler:
        return self

    def start(self) -> _FakeSampler:
        self.running = True
        return self

    def stop(self) -> LoadReading:
        self.running = False
        other = self.loads.pop(0)
        return LoadReading(1.0, 5, other, other, 1.0, "a script")


def test_best_rate_keeps_the_fastest_repeat_and_its_spread() -> None:
    seconds = iter([0.01, 0.02, 0.025, 0.02])  # warm-up, then three repeats
    rate, info = best_rate(lambda: None, 1e9, 3, 0.0, lambda run, n: next(seconds))
    assert rate == pytest.approx(1e9 / 0.02)
    assert info["repeats"] == 3
    assert info["spread"] == pytest.approx(0.25)


def test_a_device_clock_times_every_call_in_seconds() -> None:
    """CUDA events report milliseconds; a rate computed from them must not be 1000 times too high."""
    calls: list[int] = []

    def event_timer(thunk) -> float:
        before = len(calls)
        thunk()
        return 20.0 * (len(calls) - before)  # 20 ms of device time per call

    rate, info = best_rate(lambda: calls.append(1), 1e9, 2, 0.05, event_clock(event_timer))
    # A 20 ms warm-up call, then samples of 3 calls (60 ms, at least the 50 ms asked for).
    assert info["iterations_per_sample"] == 3 and len(calls) == 1 + 2 * 3
    assert info["best_sample_s"] == pytest.approx(0.06)
    assert rate == pytest.approx(1e9 / 0.02)


def test_a_busy_measurement_is_repeated_and_the_best_kept() -> None:
    results = iter([_ceilings(99.7 * GFLOP), _ceilings(140 * GFLOP)])
    sampler = _FakeSampler([0.9, 0.05])
    got = measure_until_idle(lambda: next(results), sampler=sampler)
    assert got.peak("fp32") == pytest.approx(140 * GFLOP)
    assert got.details["attempts"] == 2 and got.details["measured_while"] == "idle"
    assert "machine idle" in measurement_note(got.details)


def test_a_machine_busy_throughout_says_so() -> None:
    results = iter([_ceilings(90 * GFLOP), _ceilings(99.7 * GFLOP), _ceilings(95 * GFLOP)])
    got = measure_until_idle(lambda: next(results), sampler=_FakeSampler([0.8, 0.9, 0.85]))
    assert got.peak("fp32") == pytest.approx(99.7 * GFLOP)
    assert got.details["measured_while"] == "busy" and got.details["attempts"] == 3
    assert "planner detect --ceilings --refresh" in got.details["busy_note"]
    assert "machine busy" in measurement_note(got.details)


def test_a_ceiling_beaten_by_a_later_measurement_is_invalidated(tmp_path: Path, monkeypatch) -> None:
    hw = two_core_x86()
    calls: list[int] = []

    def fake_measure(hw, quick):
        calls.append(1)
        return _ceilings(99.7 * GFLOP if len(calls) == 1 else 120 * GFLOP)

    monkeypatch.setattr(ceilings_module, "_measure_cpu", fake_measure)
    first = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    assert first.peak("fp32") == pytest.approx(99.7 * GFLOP)
    assert measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu") == first and len(calls) == 1

    # A model later attains 145 GFLOP/s: the ceiling rises to it, marked with where it came from.
    raised = raise_exceeded(first, {"fp32": (145 * GFLOP, "the whole model (resnet)")}, hw=hw, cache_dir=tmp_path)
    assert raised.peak("fp32") == pytest.approx(145 * GFLOP)
    assert raised.details["fp32_raised"]["where"] == "the whole model (resnet)"
    assert raised.details["fp32_raised"]["from"] == pytest.approx(99.7 * GFLOP)
    assert "attained by the whole model (resnet)" in measurement_note(raised.details)
    stored = json.loads(cache_path(tmp_path, hw, "cpu", True).read_text())
    assert stored["invalidated"] and stored["kept"]["fp32"]["to"] == pytest.approx(145 * GFLOP)

    # The next run measures again; the attained figure stays a lower bound on the new ceiling.
    again = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    assert len(calls) == 2
    assert again.peak("fp32") == pytest.approx(145 * GFLOP)
    assert "fp32_raised" in again.details

    # --refresh starts over from a fresh measurement alone.
    fresh = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert len(calls) == 3 and fresh.peak("fp32") == pytest.approx(120 * GFLOP)


def test_a_rate_under_the_ceiling_changes_nothing(tmp_path: Path) -> None:
    ceilings = _ceilings(100 * GFLOP)
    assert raise_exceeded(ceilings, {"fp32": (80 * GFLOP, "model")}, hw=two_core_x86(), cache_dir=tmp_path) \
        is ceilings


def test_the_cache_is_keyed_by_isa_and_library_versions() -> None:
    hw = two_core_x86()
    key = cache_key(hw, "cpu")
    assert {"cpu_model", "usable_cores", "isa", "torch_version", "numpy_version"} <= set(key)
    fewer = with_cpu(hw, features=[f for f in hw.cpu.features if f != "avx2"])
    assert cache_key(fewer, "cpu")["isa"] != key["isa"]


def test_a_sampler_is_stopped_when_the_measurement_fails() -> None:
    sampler = _FakeSampler([0.0])

    def broken() -> Ceilings:
        raise RuntimeError("oneDNN said no")

    with pytest.raises(RuntimeError, match="oneDNN said no"):
        measure_until_idle(broken, sampler=sampler)
    assert not sampler.running


def test_the_real_load_sampler_says_what_other_processes_used() -> None:
    """Measured with the shared /proc/stat sampler: each attempt's load is a figure (or None off Linux)."""
    results = iter([_ceilings(99.7 * GFLOP), _ceilings(99.7 * GFLOP), _ceilings(99.7 * GFLOP)])
    got = measure_until_idle(lambda: (sum(range(200_000)), next(results))[1])
    loads = got.details["other_cores"]
    assert 1 <= got.details["attempts"] == len(loads) <= ceilings_module.MAX_ATTEMPTS
    assert all(load is None or load >= 0.0 for load in loads)
    expected = "unknown" if loads[-1] is None else ("busy" if loads[-1] > ceilings_module.BUSY_OTHER_CORES
                                                     else "idle")
    assert got.details["measured_while"] == expected
    if expected != "unknown":
        assert f"machine {expected}" in measurement_note(got.details)
