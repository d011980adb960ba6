"""measure_ceilings(): real quick measurements on this machine, the cache, and labelled fallbacks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hardware_fake_nvml import FakeGpu, FakeNvml, a100
from hardware_trees import FIXTURES

import planner.hardware.ceilings as ceilings_module
from planner.codec import from_data, to_data
from planner.hardware import Ceilings, detect, measure_ceilings
from planner.hardware.ceilings import cache_path
from planner.hardware.load import LoadReading


@pytest.fixture(scope="module")
def hw():
    """This machine's profile."""
    return detect()


@pytest.fixture(scope="module")
def measured_ceilings(hw, tmp_path_factory):
    """One quick real measurement, shared by the tests that only read it."""
    cache = tmp_path_factory.mktemp("ceilings")
    return cache, measure_ceilings(hw, quick=True, cache_dir=cache, device="cpu")


def _positive_finite(value: float) -> bool:
    return math.isfinite(value) and value > 0


def test_quick_measurement_is_positive_and_finite(hw, measured_ceilings) -> None:
    """fp32 FLOP/s and bandwidth are real positive numbers, measured here, with a ridge point."""
    _cache, result = measured_ceilings
    assert result.source == "measured" and result.is_measured
    assert result.device == "cpu"
    assert _positive_finite(result.peak("fp32"))
    assert _positive_finite(result.bandwidth_bytes_per_s)
    assert _positive_finite(result.ridge_point())
    assert result.details["threads"] == hw.cpu.usable_cores
    assert result.details["torch_version"] == torch.__version__
    # The float roofs are the faster of torch.mm and oneDNN's 1x1 convolution, and say which.
    assert result.details["fp32_method"] in ceilings_module.GEMM_METHODS.values()
    if hw.cpu.has_bf16:
        assert _positive_finite(result.peak("bf16"))
    else:
        assert not result.has("bf16")
        assert "emulated" in result.details["bf16_omitted"]
        with pytest.raises(KeyError, match="emulated"):
            result.peak("bf16")


def test_int8_peak_is_measured_with_an_int8_gemm(hw, measured_ceilings) -> None:
    """Where the CPU has VNNI (or AMX), the quick measurement ran torch's int8 GEMM and its roof sits above fp32."""
    if not any(hw.cpu.has(f) for f in ("avx512_vnni", "avx_vnni", "amx_int8")):
        pytest.skip(f"{hw.cpu.model} has no x86 int8 dot product (VNNI/AMX), so no int8 roof is measured")
    _cache, result = measured_ceilings
    assert _positive_finite(result.peak("int8"))
    # Which roof is higher is this machine's measurement (and under load it can flip), not the test's to assume:
    # int8 at or below fp32 is kept as a finding that says so.
    if result.peak("int8") <= result.peak("fp32"):
        assert "int8_slower" in result.details, result.details
    assert result.details["int8_method"].startswith("torch._int_mm")
    assert result.details["int8_gemm"]["repeats"] == result.details["repeats"]


def test_no_int8_roof_without_an_int8_dot_product(tmp_path: Path) -> None:
    """A CPU without VNNI/AMX/dotprod gets no int8 roof, and asking for one says why."""
    from hardware_profiles import two_core_x86

    epyc = two_core_x86()  # Zen 3: AVX2, no VNNI, no bf16
    result = ceilings_module._measure_cpu_once(epyc, quick=True)
    assert set(result.peak_flops) == {"fp32"}
    assert "int8 dot-product" in result.details["int8_omitted"]
    with pytest.raises(KeyError, match="no int8 ceiling on cpu: CPU lacks an int8 dot-product"):
        result.peak("int8")


class _IdleLoad:
    """The load sampler, reading an idle machine: these tests are about the cache, not this machine's load."""

    def __call__(self) -> _IdleLoad:
        return self

    def start(self) -> _IdleLoad:
        return self

    def stop(self) -> LoadReading:
        return LoadReading(1.0, 5, 0.0, 0.0, 1.0, "a script")


@pytest.fixture
def injected(monkeypatch) -> list[int]:
    """The CPU measurement replaced by recorded figures on an idle machine, whatever this CPU's bf16/fp32 order
    and load: each call is counted."""
    calls: list[int] = []

    def once(hw, quick) -> Ceilings:
        calls.append(1)
        return Ceilings(peak_flops={"fp32": 272e9, "bf16": 155e9}, bandwidth_bytes_per_s=40e9, source="measured",
                        details={"timestamp": "2026-12-01T09:00:00+00:00", "mode": "quick", "repeats": 3})

    monkeypatch.setattr(ceilings_module, "_measure_cpu_once", once)
    monkeypatch.setattr(ceilings_module, "LoadSampler", _IdleLoad())
    return calls


def test_second_call_hits_the_cache(hw, injected, tmp_path: Path, monkeypatch) -> None:
    """The cache file exists and a second call returns the same numbers without measuring."""
    first = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    path = cache_path(tmp_path, hw, "cpu", quick=True)
    assert path.is_file()
    assert json.loads(path.read_text())["ceilings"] == to_data(first)

    def must_not_measure(*args, **kwargs):
        raise AssertionError("measured again despite a valid cache")

    monkeypatch.setattr(ceilings_module, "_measure_cpu", must_not_measure)
    assert measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu") == first
    assert len(injected) == 1


def test_corrupt_cache_is_remeasured(hw, injected, tmp_path: Path) -> None:
    """A garbled cache file is ignored, re-measured and rewritten."""
    path = cache_path(tmp_path, hw, "cpu", quick=True)
    path.write_text("{ this is not json")
    result = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    assert result.is_measured and _positive_finite(result.peak("fp32")) and len(injected) == 1
    assert json.loads(path.read_text())["ceilings"]["source"] == "measured"


def test_cache_with_bad_numbers_is_remeasured(hw, tmp_path: Path, monkeypatch) -> None:
    """A cache file with a negative ceiling is not trusted."""
    path = cache_path(tmp_path, hw, "cpu", quick=True)
    bad = to_data(Ceilings(peak_flops={"fp32": 1e9}, bandwidth_bytes_per_s=1e9, source="measured"))
    bad["peak_flops"]["fp32"] = -1.0
    path.write_text(json.dumps({"format": 1, "key": ceilings_module.cache_key(hw, "cpu"), "ceilings": bad}))
    good = Ceilings(peak_flops={"fp32": 2e9}, bandwidth_bytes_per_s=3e9, source="measured")
    monkeypatch.setattr(ceilings_module, "_measure_cpu", lambda hw, quick: good)
    assert measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu") == good


def test_refresh_and_full_cache_serves_quick(hw, tmp_path: Path, monkeypatch) -> None:
    """refresh=True measures again; a cached full measurement also answers a quick request."""
    calls: list[bool] = []

    def fake(hw, quick):
        calls.append(quick)
        return Ceilings(peak_flops={"fp32": 1e9 * len(calls)}, bandwidth_bytes_per_s=1e9, source="measured")

    monkeypatch.setattr(ceilings_module, "_measure_cpu", fake)
    full = measure_ceilings(hw, quick=False, cache_dir=tmp_path, device="cpu")
    assert measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu") == full
    again = measure_ceilings(hw, quick=False, cache_dir=tmp_path, device="cpu", refresh=True)
    assert calls == [False, False]
    assert again.peak() == 2e9


def test_cache_dir_from_environment(hw, tmp_path: Path, monkeypatch) -> None:
    """PLANNER_CACHE_DIR decides where the cache goes when no cache_dir is given."""
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ceilings_module, "_measure_cpu",
                        lambda hw, quick: Ceilings(peak_flops={"fp32": 1e9}, bandwidth_bytes_per_s=1e9,
                                                   source="measured"))
    measure_ceilings(hw, quick=True, device="cpu")
    assert list(tmp_path.glob("ceilings-cpu-quick-*.json"))


def test_threads_restored(hw, tmp_path: Path) -> None:
    """Measuring sets torch's thread count to the usable cores only for the measurement."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu", refresh=True)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_failed_measurement_is_a_labelled_estimate(hw, tmp_path: Path, monkeypatch) -> None:
    """If torch measurement fails the result says 'estimate' with its basis, and nothing is cached."""
    def explode(hw, quick):
        raise RuntimeError("oneDNN said no")

    monkeypatch.setattr(ceilings_module, "_measure_cpu", explode)
    result = measure_ceilings(hw, quick=True, cache_dir=tmp_path, device="cpu")
    assert result.source.startswith("estimate: ")
    assert "FLOP/cycle" in result.source
    assert "oneDNN said no" in result.details["measurement_error"]
    assert _positive_finite(result.peak()) and _positive_finite(result.bandwidth_bytes_per_s)
    assert not list(tmp_path.glob("*.json"))


def test_gpu_failure_falls_back_to_vendor_table(tmp_path: Path, monkeypatch) -> None:
    """A known GPU whose measurement fails gets datasheet numbers, labelled as such."""
    gpu_hw = detect(root=FIXTURES / "epyc_zen3", nvml_module=FakeNvml([a100()]))

    def explode(hw, quick, index=0):
        raise RuntimeError("CUDA error: no kernel image")

    monkeypatch.setattr(ceilings_module, "_measure_cuda", explode)
    result = measure_ceilings(gpu_hw, quick=True, cache_dir=tmp_path, device="cuda")
    assert result.source == "vendor table (fallback): NVIDIA A100 80GB SXM datasheet, dense"
    assert result.device == "cuda:0"
    assert result.peak("bf16") == 312e12
    assert "no kernel image" in result.details["measurement_error"]


def test_unknown_gpu_failure_falls_back_to_cpu(tmp_path: Path, monkeypatch) -> None:
    """An unknown GPU whose measurement fails gets the CPU's roofline, not invented GPU numbers."""
    odd = FakeGpu(name="NVIDIA Mystery GPU", total=1 << 30, free=1 << 30, cc=(8, 6))
    gpu_hw = detect(root=FIXTURES / "epyc_zen3", nvml_module=FakeNvml([odd]))
    monkeypatch.setattr(ceilings_module, "_measure_cuda",
                        lambda hw, quick, index=0: (_ for _ in ()).throw(RuntimeError("driver too old")))
    cpu_numbers = Ceilings(peak_flops={"fp32": 5e10}, bandwidth_bytes_per_s=2e10, source="measured")
    monkeypatch.setattr(ceilings_module, "_measure_cpu", lambda hw, quick: cpu_numbers)
    result = measure_ceilings(gpu_hw, quick=True, cache_dir=tmp_path, device="cuda")
    assert result.device == "cpu"
    assert result.peak() == 5e10
    assert "driver too old" in result.details["gpu_measurement_error"]


def test_ceilings_round_trip_and_validation(tmp_path: Path) -> None:
    """Ceilings survive to_data/from_data and the cache; a cache holding impossible numbers is not trusted."""
    c = Ceilings(peak_flops={"fp32": 1e11, "bf16": 4e11}, bandwidth_bytes_per_s=2e10, source="measured",
                 details={"matrix_size": 1024})
    assert from_data(json.loads(json.dumps(to_data(c))), Ceilings) == c
    assert c.ridge_point("bf16") == pytest.approx(20.0)
    key = {"cpu_model": "test"}
    path = tmp_path / "ceilings.json"
    for ceilings, expected in ((to_data(c), c), ({**to_data(c), "bandwidth_bytes_per_s": float("inf")}, None)):
        path.write_text(json.dumps({"format": ceilings_module.CACHE_FORMAT, "key": key, "ceilings": ceilings}))
        assert ceilings_module._load(path, key) == expected


@pytest.mark.gpu
def test_cuda_measurement(tmp_path: Path) -> None:
    """On a CUDA machine the GPU ceilings are measured for fp32, fp16 and (where native) bf16."""
    gpu_hw = detect()
    result = measure_ceilings(gpu_hw, quick=True, cache_dir=tmp_path, device="cuda")
    assert result.is_measured and result.device == "cuda:0"
    for precision in ("fp32", "fp16"):
        assert _positive_finite(result.peak(precision))
    assert result.peak("fp16") > result.peak("fp32")
    assert _positive_finite(result.bandwidth_bytes_per_s)



@pytest.mark.parametrize(("mm", "conv", "method"), [(225e9, 380e9, "conv"), (400e9, 380e9, "mm")])
def test_the_float_roof_is_the_faster_of_the_two_gemms(monkeypatch, mm, conv, method) -> None:
    """A BLAS that takes a slow path on this CPU (torch.mm on an AMD EPYC) cannot set the roof below oneDNN's."""
    def fake_rate(fn, flops, repeats, min_sample, clock):
        fn()  # the real call, so a shape error would show
        rate = conv if fn.func is torch.nn.functional.conv2d else mm
        return rate, {"repeats": repeats, "spread": 0.0}

    monkeypatch.setattr(ceilings_module, "best_rate", fake_rate)
    rate, info, said = ceilings_module._float_gemm_peak(torch, torch.float32, 64, 2, 0.0)
    assert rate == max(mm, conv) and info["repeats"] == 2
    assert said == ceilings_module.GEMM_METHODS[method]
