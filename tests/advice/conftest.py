"""Hardware for the advice tests (real profiles from the fixture trees) and fake baseline profiles."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hardware_fake_nvml import a100
from hardware_profiles import gpu_server, with_cpu, without_features

from planner.hardware import HardwareProfile

MIB = 1 << 20
GIB = 1 << 30


@pytest.fixture
def cpu_server(hardware_profile) -> HardwareProfile:
    """A 2-core Intel Xeon server with AVX-512 VNNI but no bf16 units (Ice Lake-like): Sapphire Rapids, trimmed."""
    xeon = hardware_profile("xeon_sapphire_rapids")
    plain = without_features(xeon, "amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_fp16", "avx_vnni")
    return with_cpu(plain, usable_cores=2)


@pytest.fixture
def big_cpu_server(hardware_profile) -> HardwareProfile:
    """An 8-core, 16-thread Intel server with bf16 units (AMX): the Sapphire Rapids tree, scaled up."""
    return with_cpu(hardware_profile("xeon_sapphire_rapids"), physical_cores=8, logical_cores=16, usable_cores=16)


@pytest.fixture
def pi4(hardware_profile) -> HardwareProfile:
    """A Raspberry Pi 4: 4 Cortex-A72 cores, NEON only."""
    return hardware_profile("rpi4")


@pytest.fixture
def jetson(hardware_profile) -> HardwareProfile:
    """A Jetson AGX Orin: 12 ARM cores and an integrated Ampere GPU."""
    return hardware_profile("jetson_agx_orin")


@pytest.fixture
def a100_server() -> HardwareProfile:
    """A GPU server: AMD EPYC host with one A100 80GB that NVML read as 0% busy."""
    return gpu_server(a100(utilization=0))


def baseline(*, p50: float = 38.2, p95: float | None = 40.0, p99: float | None = None, samples: int = 200,
             target: str = "cpu", device: str = "cpu", intra: int | None = 2, inter: int | None = 1,
             parameters: int = 11_689_512, size_bytes: int = 46_758_048, peak: int = 300 * MIB,
             throughput: list[dict[str, Any]] | None = None, knee: int | None = None,
             findings: list[dict[str, Any]] | None = None, mkldnn: bool | None = True,
             gpu_utilization: float | None = None, bound: str | None = "compute",
             input_shape: tuple[int, ...] = (1, 3, 224, 224), unstable: bool = False,
             omp: str | None = None) -> dict[str, Any]:
    """A `planner profile --json` look-alike (ResNet-18-sized by default)."""
    data: dict[str, Any] = {
        "model": {"name": "resnet18", "parameters": parameters, "size_bytes": size_bytes, "source": "demo:resnet18"},
        "input_shape": list(input_shape),
        "flops_per_sample": 3.6e9,
        "latency_ms": {"p50_ms": p50, "p95_ms": p95, "p99_ms": p99, "mean_ms": p50, "std_ms": 0.5,
                       "samples": samples, "unstable": unstable},
        "throughput": throughput if throughput is not None else [
            {"batch": 1, "latency_p50_ms": p50, "samples_per_s": 1000 / p50},
            {"batch": 2, "latency_p50_ms": p50 * 1.9, "samples_per_s": 2000 / (p50 * 1.9)},
            {"batch": 4, "latency_p50_ms": p50 * 3.8, "samples_per_s": 4000 / (p50 * 3.8)},
        ],
        "knee_batch": knee,
        "peak_memory_bytes": peak,
        "memory_basis": "peak RSS of the worker" if device == "cpu" else "CUDA allocator peak",
        "layers": [
            {"name": "layer4.1.conv2", "type": "Conv2d", "time_ms": p50 * 0.3, "time_share": 0.3, "flops": 1e9},
            {"name": "conv1", "type": "Conv2d", "time_ms": p50 * 0.2, "time_share": 0.2, "flops": 2e8},
            {"name": "fc", "type": "Linear", "time_ms": p50 * 0.05, "time_share": 0.05, "flops": 1e6},
        ],
        "findings": findings or [],
        "bottleneck": {"bound": bound, "explanation": "test"} if bound else {},
        "threads": {"torch_intra_op": intra, "torch_inter_op": inter, "OMP_NUM_THREADS": omp},
        "info": {"mkldnn": mkldnn, "device": device, "precision": "fp32"},
        "target": target,
    }
    if gpu_utilization is not None:
        data["gpu_utilization_pct"] = gpu_utilization
    return data


@pytest.fixture
def make_baseline() -> Callable[..., dict[str, Any]]:
    """The baseline builder, as a fixture."""
    return baseline
