"""Ceilings a busy moment cannot overwrite: a measurement under more interference never replaces a cleaner
cached one, a busy one is never cached, and a precision measured slower than a more precise one is a finding that
is cached like any other figure.

The measurement and the load sampler are faked (numbers and loads from a script), so nothing is timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hardware_profiles import fixture_profile

import planner.hardware.ceilings as ceilings_module
from planner.hardware.ceiling_notes import measurement_note, warnings
from planner.hardware.ceiling_trust import slower_precisions
from planner.hardware.ceilings import (
    CACHE_FORMAT,
    Ceilings,
    cache_key,
    cache_path,
    measure_ceilings,
    measure_until_idle,
)
from planner.hardware.load import LoadReading

G = 1e9


class _Sampler:
    """Other processes' cores during each attempt, from a script."""

    def __init__(self, loads: list[float | None]) -> None:
        self.loads = list(loads)

    def __call__(self) -> _Sampler:
        return self

    def start(self) -> _Sampler:
        return self

    def stop(self) -> LoadReading:
        other = self.loads.pop(0)
        return LoadReading(1.0, 5, other, other, 1.0, "a script")


def _figures(fp32: float, bf16: float | None = None, bandwidth: float = 57 * G, int8: float | None = None,
             stamp: str = "2026-11-25T10:00:00+00:00") -> Ceilings:
    peaks = {"fp32": fp32, **({"bf16": bf16} if bf16 else {}), **({"int8": int8} if int8 else {})}
    return Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source="measured",
                    details={"timestamp": stamp, "repeats": 3, "mode": "quick"})


def _measures(monkeypatch, *runs: tuple[list[Ceilings], list[float | None]]) -> list[int]:
    """Each call to measure the CPU goes through the real retry-while-busy loop with scripted figures and loads."""
    queue = list(runs)
    calls: list[int] = []

    def fake(hw, quick):
        figures, loads = queue.pop(0)
        calls.append(1)
        results = iter(figures)
        return measure_until_idle(lambda: next(results), sampler=_Sampler(loads))

    monkeypatch.setattr(ceilings_module, "_measure_cpu", fake)
    return calls


@pytest.fixture
def bf16_cpu():
    """A Xeon (Sapphire Rapids) with native bf16, AVX-512 VNNI and AMX."""
    return fixture_profile("xeon_sapphire_rapids")


def _cached(path: Path) -> dict:
    return json.loads(path.read_text())["ceilings"]


def test_a_busy_measurement_after_an_idle_one_is_not_stored(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    _measures(monkeypatch,
              ([_figures(300 * G, 412 * G)], [0.01]),
              ([_figures(250 * G, 380 * G, 40 * G)] * 3, [0.99, 0.99, 0.99]))
    idle = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    path = cache_path(tmp_path, bf16_cpu, "cpu", True)
    before = path.read_text()

    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert got.peak_flops == idle.peak_flops and got.bandwidth_bytes_per_s == idle.bandwidth_bytes_per_s
    assert path.read_text() == before  # the cache still holds the idle figures
    note = got.details["kept_out_note"]
    assert "a re-measure under load (0.99 cores busy) was kept out of the cache" in note
    assert "the cached figures (idle, measured 2026-11-25T10:00:00+00:00) are used" in note
    assert note in warnings(got.details)


def test_an_idle_measurement_after_a_busy_one_replaces_it(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    _measures(monkeypatch,
              ([_figures(250 * G, 380 * G, 40 * G)] * 3, [0.9, 0.8, 0.9]),
              ([_figures(240 * G, 410 * G, 39 * G)], [0.02]))
    busy = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert busy.details["measured_while"] == "busy"
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    # Replaced as a whole, fp32 and bandwidth included: the idle run is the one to believe.
    assert got.peak_flops == {"fp32": 240 * G, "bf16": 410 * G}
    assert got.bandwidth_bytes_per_s == 39 * G
    assert "kept_out_note" not in got.details
    assert _cached(cache_path(tmp_path, bf16_cpu, "cpu", True))["details"]["measured_while"] == "idle"


def test_a_busier_run_still_raises_a_figure_it_measured_higher(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    """Interference only ever lowers a figure: a higher one from a busy run is a real lower bound, and is cached."""
    _measures(monkeypatch,
              ([_figures(180 * G, 412 * G)], [0.0]),
              ([_figures(194 * G, 400 * G, 22 * G)] * 3, [0.99] * 3))
    measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert got.peak_flops == {"fp32": 194 * G, "bf16": 412 * G} and got.bandwidth_bytes_per_s == 57 * G
    assert "except fp32, measured higher" in got.details["kept_out_note"]
    assert "fp32 raised from 180 GFLOP/s to 194 GFLOP/s, attained by a re-measure under load" \
        in measurement_note(got.details)
    stored = _cached(cache_path(tmp_path, bf16_cpu, "cpu", True))
    assert stored["peak_flops"] == {"fp32": 194 * G, "bf16": 412 * G}
    assert stored["details"]["measured_while"] == "idle" and "kept_out_note" not in stored["details"]


def test_the_issue_numbers_keep_the_cached_roof(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    """Issue 24: the cache held bf16 412 GFLOP/s and 57 GB/s; a quick run beside another plan measured bf16 139,
    fp32 194 and 22 GB/s after three attempts under 0.99 cores. The ridge point must not move."""
    _measures(monkeypatch,
              ([_figures(205 * G, 412 * G, 57 * G)], [0.01]),
              ([_figures(194 * G, 139 * G, 22 * G)] * 3, [0.99, 0.99, 0.99]))
    cached = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    path = cache_path(tmp_path, bf16_cpu, "cpu", True)
    before = path.read_text()

    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert got.peak("bf16") == 412 * G and got.peak("fp32") == 205 * G and got.bandwidth_bytes_per_s == 57 * G
    assert got.ridge_point("bf16") == cached.ridge_point("bf16")
    assert path.read_text() == before
    note = got.details["kept_out_note"]
    assert "a re-measure under load (0.99 cores busy) was kept out of the cache" in note
    assert "bf16 139 GFLOP/s" in note and "bandwidth 22 GB/s" in note
    assert "bf16_slower" not in got.details  # the cached figures are in order: no finding about the busy ones
    assert got.details["kept_out"]["other_cores"] == pytest.approx(0.99)
    # The next start reads the clean figures, not the busy ones.
    assert measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu").peak("bf16") == 412 * G


def test_bf16_below_fp32_on_an_idle_machine_is_a_cached_finding(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    """A lower precision that measured slower is what this CPU does: said as a finding, and cached."""
    calls = _measures(monkeypatch, ([_figures(194 * G, 139 * G, 22 * G)], [0.0]))
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert got.peak("bf16") == 139 * G
    assert got.details["bf16_slower"] == ("bf16 GEMM measured 139 GFLOP/s, below fp32's 194 GFLOP/s: on this CPU "
                                          "bf16 runs slower than fp32 (measured; the ISA flag alone does not make "
                                          "it pay)")
    assert got.details["bf16_slower"] in measurement_note(got.details)
    assert not warnings(got.details)  # a finding, not a warning
    assert not any(k.endswith("_failed") for k in got.details) and "failed" not in measurement_note(got.details)
    # Cached: the next start reads it instead of measuring again.
    assert measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu") == got and len(calls) == 1


def test_a_busy_measurement_with_nothing_cached_is_cached_until_a_clean_one_replaces_it(bf16_cpu, tmp_path: Path,
                                                                                        monkeypatch) -> None:
    """A machine that is always busy is not measured again at every start; the first clean measurement wins."""
    calls = _measures(monkeypatch, ([_figures(194 * G, 139 * G, 22 * G)] * 3, [0.99] * 3),
                      ([_figures(205 * G, 412 * G)], [0.0]))
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert got.peak("bf16") == 139 * G and got.details["measured_while"] == "busy"
    assert "so these ceilings may be low" in got.details["busy_note"]
    assert "bf16 runs slower than fp32" in got.details["bf16_slower"]
    assert measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu") == got and len(calls) == 1
    clean = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert len(calls) == 2 and clean.peak("bf16") == 412 * G and "bf16_slower" not in clean.details
    assert measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu").peak("bf16") == 412 * G


def test_every_measured_precision_below_a_more_precise_one_is_a_finding(bf16_cpu) -> None:
    assert slower_precisions(_figures(240 * G, 410 * G, int8=800 * G)) == {}
    found = slower_precisions(_figures(240 * G, 410 * G, int8=300 * G))
    assert set(found) == {"int8"} and "int8 GEMM measured 300 GFLOP/s, below bf16's 410 GFLOP/s" in found["int8"]
    # The same on a CPU without the flags (an Arm int8 kernel, an emulated bf16): the figure is what ran.
    assert set(slower_precisions(_figures(194 * G, 139 * G))) == {"bf16"}


def test_a_raised_figure_that_restores_the_order_drops_the_finding(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    """The finding describes the figures shown: a later, higher bf16 figure replaces it."""
    from planner.hardware.ceilings import raise_exceeded

    _measures(monkeypatch, ([_figures(194 * G, 139 * G)], [0.0]))
    first = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert "bf16_slower" in first.details
    raised = raise_exceeded(first, {"bf16": (300 * G, "the whole model")}, hw=bf16_cpu, cache_dir=tmp_path)
    assert raised.peak("bf16") == 300 * G and "bf16_slower" not in raised.details


def test_a_cache_from_before_the_int8_roof_is_measured_again(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    calls = _measures(monkeypatch, ([_figures(240 * G, 410 * G, int8=800 * G)], [0.0]))
    path = cache_path(tmp_path, bf16_cpu, "cpu", True)
    old = {"peak_flops": {"fp32": 240 * G, "bf16": 410 * G}, "bandwidth_bytes_per_s": 57 * G,
           "source": "measured", "device": "cpu", "details": {"measured_while": "idle"}}
    path.write_text(json.dumps({"format": CACHE_FORMAT - 1, "key": cache_key(bf16_cpu, "cpu"), "ceilings": old}))
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert len(calls) == 1 and got.peak("int8") == 800 * G
    assert json.loads(path.read_text())["format"] == CACHE_FORMAT


def test_repeated_attempts_keep_the_roofs_in_their_order() -> None:
    """The best of several busy attempts lists fp32, bf16, int8 as measured, so tables never reorder."""
    runs = iter([_figures(90 * G, 300 * G, int8=900 * G), _figures(95 * G, 280 * G, int8=1000 * G)])
    got = measure_until_idle(lambda: next(runs), sampler=_Sampler([0.9, 0.9]), attempts=2)
    assert list(got.peak_flops) == ["fp32", "bf16", "int8"]
    assert got.peak_flops == {"fp32": 95 * G, "bf16": 300 * G, "int8": 1000 * G}


def test_a_busy_remeasure_after_a_model_beat_the_cache_keeps_the_clean_figures_raised(bf16_cpu, tmp_path: Path,
                                                                                         monkeypatch) -> None:
    """A model beat the cached fp32 peak, so the next start measures again; under load, that measurement is kept
    out, and the cache holds its clean figures with fp32 raised to what the model attained."""
    from planner.hardware.ceilings import raise_exceeded

    calls = _measures(monkeypatch,
                      ([_figures(200 * G, 412 * G)], [0.01]),
                      ([_figures(150 * G, 300 * G, 30 * G)] * 3, [0.99] * 3))
    first = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    raise_exceeded(first, {"fp32": (230 * G, "the whole model")}, hw=bf16_cpu, cache_dir=tmp_path)

    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    assert len(calls) == 2
    assert got.peak_flops == {"fp32": 230 * G, "bf16": 412 * G} and got.bandwidth_bytes_per_s == 57 * G
    assert "was kept out of the cache" in got.details["kept_out_note"]
    # The next start reads that cache again: no more measuring, the same roofs.
    assert measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu").peak_flops == got.peak_flops
    assert len(calls) == 2


def test_a_refresh_whose_load_could_not_be_read_replaces_the_cache(bf16_cpu, tmp_path: Path, monkeypatch) -> None:
    """Only measured interference keeps figures out: an unreadable load is no evidence of any."""
    _measures(monkeypatch, ([_figures(300 * G, 412 * G)], [0.01]), ([_figures(280 * G, 400 * G)], [None]))
    measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu")
    got = measure_ceilings(bf16_cpu, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert got.peak_flops == {"fp32": 280 * G, "bf16": 400 * G} and "kept_out_note" not in got.details
    assert _cached(cache_path(tmp_path, bf16_cpu, "cpu", True))["details"]["measured_while"] == "unknown"
