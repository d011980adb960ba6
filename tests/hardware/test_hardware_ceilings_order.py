"""Rules are measurements: a CPU whose bf16 GEMM runs slower than fp32 keeps that figure, cached and said as a
finding, and the predictions follow it; only measured interference keeps a figure out of the cache.

The machine is an Intel Xeon as issue 34 found it (family 6 model 207: AVX-512 BF16 and FP16, AMX hidden by the
VM), built from the Sapphire Rapids fixture tree. The measurement and the load it ran under are injected
(`_measure_cpu_once` and the load sampler), so nothing is timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hardware_profiles import fixture_profile, with_cpu, without_features

import planner.hardware.ceilings as ceilings_module
from planner.codec import to_data
from planner.hardware.ceiling_notes import measurement_note, warnings
from planner.hardware.ceilings import Ceilings, cache_path, measure_ceilings
from planner.hardware.load import LoadReading
from planner.plugins.expectation import band

G = 1e9
# Recorded on that Xeon: bf16 torch.mm 153-157 GFLOP/s against fp32's 262-272, every time.
FP32, BF16, INT8 = 272 * G, 155 * G, 520 * G


@pytest.fixture
def xeon_bf16_no_amx():
    """Intel Xeon, family 6 model 207 (Emerald Rapids), with avx512_bf16 and avx512_fp16 but no AMX (the VM hides
    it)."""
    xeon = without_features(fixture_profile("xeon_sapphire_rapids"), "amx_bf16", "amx_tile", "amx_int8")
    assert xeon.cpu.has("avx512_bf16") and xeon.cpu.has("avx512_fp16") and not xeon.cpu.has_amx
    return with_cpu(xeon, model="INTEL(R) XEON(R) PLATINUM 8581C")


class _Load:
    """The load sampler: other processes' cores during each attempt, from a script."""

    def __init__(self, loads: list[float]) -> None:
        self.loads = list(loads)

    def __call__(self) -> _Load:
        return self

    def start(self) -> _Load:
        return self

    def stop(self) -> LoadReading:
        other = self.loads.pop(0)
        return LoadReading(1.0, 5, other, other, 1.0, "a script")


def _inject(monkeypatch, loads: list[float]) -> list[int]:
    """Each CPU measurement returns the recorded figures, under the scripted loads (one per attempt)."""
    calls: list[int] = []

    def once(hw, quick) -> Ceilings:
        calls.append(1)
        return Ceilings(peak_flops={"fp32": FP32, "bf16": BF16, "int8": INT8}, bandwidth_bytes_per_s=40 * G,
                        source="measured", details={"timestamp": "2026-12-01T09:00:00+00:00", "mode": "quick",
                                                    "repeats": 3})

    monkeypatch.setattr(ceilings_module, "_measure_cpu_once", once)
    monkeypatch.setattr(ceilings_module, "LoadSampler", _Load(loads))
    return calls


def _baseline(ceilings: Ceilings, bound: str = "compute") -> dict:
    """The baseline facts the predictions read: the run's ceilings and the bottleneck."""
    return {"ceilings": to_data(ceilings), "bottleneck": {"bound": bound}, "layers": [], "inputs": []}


def test_bf16_slower_than_fp32_on_an_idle_machine_is_cached_as_a_finding(xeon_bf16_no_amx, tmp_path: Path,
                                                                          monkeypatch) -> None:
    calls = _inject(monkeypatch, [0.01])
    got = measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu")
    assert got.peak("bf16") == BF16 and got.details["measured_while"] == "idle"
    finding = got.details["bf16_slower"]
    assert finding == ("bf16 GEMM measured 155 GFLOP/s, below fp32's 272 GFLOP/s: on this CPU bf16 runs slower "
                       "than fp32 (measured; the ISA flag alone does not make it pay)")
    assert finding in measurement_note(got.details) and not warnings(got.details)
    assert "failed" not in json.dumps(to_data(got))
    stored = json.loads(cache_path(tmp_path, xeon_bf16_no_amx, "cpu", True).read_text())["ceilings"]
    assert stored["details"]["bf16_slower"] == finding

    # The second call reads the cache.
    assert measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu") == got
    assert len(calls) == 1


@pytest.mark.parametrize("bound", ["compute", "memory"])
def test_the_bf16_band_follows_the_measured_ratio(xeon_bf16_no_amx, tmp_path: Path, monkeypatch, bound) -> None:
    _inject(monkeypatch, [0.01])
    measured = measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu")
    predicted = band("bf16", xeon_bf16_no_amx, _baseline(measured, bound))
    assert predicted.low is not None and predicted.high is not None
    assert predicted.low < predicted.high < 1.0
    assert predicted.family == "bf16"
    assert "bf16 GEMM measured 155 GFLOP/s, below fp32's 272 GFLOP/s" in predicted.basis
    assert "rule of thumb" not in predicted.basis and "native bf16" not in predicted.basis


def test_int8_faster_than_fp32_is_predicted_from_the_measured_ratio(xeon_bf16_no_amx, tmp_path: Path,
                                                                     monkeypatch) -> None:
    _inject(monkeypatch, [0.01])
    measured = measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu")
    predicted = band("int8", xeon_bf16_no_amx, _baseline(measured))
    # 520 over 272 GFLOP/s: 1.91x at most for a compute-bound model.
    assert predicted.high == pytest.approx(1.91) and predicted.low is not None and 0.8 <= predicted.low < 1.91
    assert "int8 GEMM measured 520 GFLOP/s, 1.91x fp32's 272 GFLOP/s" in predicted.basis


def test_without_measured_figures_the_isa_rule_of_thumb_stands_and_says_so(xeon_bf16_no_amx) -> None:
    estimate = Ceilings(peak_flops={"fp32": FP32}, bandwidth_bytes_per_s=40 * G, source="estimate: cores x clock")
    predicted = band("bf16", xeon_bf16_no_amx, _baseline(estimate))
    assert (predicted.low, predicted.high) == (1.3, 2.5)
    assert "native bf16 (AVX-512 BF16)" in predicted.basis
    assert "rule of thumb from the CPU's ISA flags, no bf16 GEMM measured here" in predicted.basis
    # A GPU's ratio says nothing about the CPU's kernels.
    gpu = Ceilings(peak_flops={"fp32": 60e12, "bf16": 800e12}, bandwidth_bytes_per_s=3e12, source="measured",
                   device="cuda:0")
    assert "rule of thumb" in band("bf16", xeon_bf16_no_amx, _baseline(gpu)).basis


def test_the_same_under_measured_interference_stays_out_of_the_cache(xeon_bf16_no_amx, tmp_path: Path,
                                                                      monkeypatch) -> None:
    calls = _inject(monkeypatch, [0.01, 0.9, 0.95, 0.99])
    clean = measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu")
    [path] = tmp_path.glob("*.json")
    before = path.read_text()
    got = measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
    assert len(calls) == 4 and "was kept out of the cache" in got.details["kept_out_note"]
    assert got.details["kept_out"]["measured_while"] == "busy"
    assert "bf16 runs slower than fp32" in got.details["bf16_slower"]  # still said, still not a failure
    assert path.read_text() == before  # the idle measurement stays cached
    assert measure_ceilings(xeon_bf16_no_amx, quick=True, cache_dir=tmp_path, device="cpu") == clean
