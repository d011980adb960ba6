"""Fake hardware (2-core CPU server, Raspberry Pi 4, Jetson, A100 server) and fake baseline profiles."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import pytest

MIB = 1 << 20
GIB = 1 << 30


def fake_cpu(*, vendor: str, model: str, architecture: str, physical: int | None, logical: int,
             usable: int, features: tuple[str, ...] = ()) -> SimpleNamespace:
    """A CpuInfo look-alike."""
    feats = frozenset(f.lower() for f in features)
    return SimpleNamespace(vendor=vendor, model=model, architecture=architecture, physical_cores=physical,
                           logical_cores=logical, usable_cores=usable, features=tuple(sorted(feats)),
                           has=lambda name: name.lower() in feats)


def fake_gpu(*, name: str, memory: int, cc: tuple[int, int] | None, tensor_cores: str | None,
             utilization: int | None = None) -> SimpleNamespace:
    """A GpuInfo look-alike."""
    return SimpleNamespace(name=name, memory_total_bytes=memory, compute_capability=cc,
                           utilization_pct=utilization, tensor_core_generation=tensor_cores)


def fake_hw(device_class: str, cpu: SimpleNamespace, *, total: int, available: int,
            gpus: tuple[SimpleNamespace, ...] = ()) -> SimpleNamespace:
    """A HardwareProfile look-alike."""
    return SimpleNamespace(device_class=device_class, cpu=cpu, gpus=gpus,
                           memory=SimpleNamespace(total_bytes=total, available_bytes=available))


@pytest.fixture
def cpu_server() -> SimpleNamespace:
    """A 2-core Intel CPU server (like the machine the tests run on)."""
    cpu = fake_cpu(vendor="GenuineIntel", model="Intel(R) Xeon(R) Platinum 8375C", architecture="x86_64",
                   physical=2, logical=2, usable=2, features=("avx2", "avx512f", "avx512_vnni"))
    return fake_hw("cpu_server", cpu, total=8 * GIB, available=6 * GIB)


@pytest.fixture
def big_cpu_server() -> SimpleNamespace:
    """An 8-core, 16-thread Intel server with bf16 units (AMX)."""
    cpu = fake_cpu(vendor="GenuineIntel", model="Intel(R) Xeon(R) Gold 6448Y", architecture="x86_64",
                   physical=8, logical=16, usable=16,
                   features=("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile"))
    return fake_hw("cpu_server", cpu, total=64 * GIB, available=60 * GIB)


@pytest.fixture
def pi4() -> SimpleNamespace:
    """A Raspberry Pi 4: 4 Cortex-A72 cores, 4 GiB."""
    cpu = fake_cpu(vendor="ARM", model="Cortex-A72", architecture="aarch64", physical=4, logical=4, usable=4,
                   features=("neon", "asimd"))
    return fake_hw("raspberry_pi", cpu, total=4 * GIB, available=3 * GIB)


@pytest.fixture
def jetson() -> SimpleNamespace:
    """A Jetson Orin: 6 ARM cores and an integrated Ampere GPU."""
    cpu = fake_cpu(vendor="ARM", model="Cortex-A78AE", architecture="aarch64", physical=6, logical=6, usable=6,
                   features=("neon", "asimd", "asimddp"))
    gpu = fake_gpu(name="Orin", memory=8 * GIB, cc=(8, 7), tensor_cores="Ampere (3rd gen)")
    return fake_hw("jetson", cpu, total=8 * GIB, available=6 * GIB, gpus=(gpu,))


@pytest.fixture
def a100_server() -> SimpleNamespace:
    """A GPU server: AMD EPYC host with one A100 80GB."""
    cpu = fake_cpu(vendor="AuthenticAMD", model="AMD EPYC 7763", architecture="x86_64", physical=16, logical=32,
                   usable=32, features=("avx2",))
    gpu = fake_gpu(name="NVIDIA A100-SXM4-80GB", memory=80 * GIB, cc=(8, 0), tensor_cores="Ampere (3rd gen)",
                   utilization=0)
    return fake_hw("datacenter_gpu", cpu, total=256 * GIB, available=240 * GIB, gpus=(gpu,))


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
