"""GPU probe through NVML (pynvml): every field is read on its own, so one unsupported call costs one field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from planner.hardware.profile import GpuInfo

T = TypeVar("T")

# FP32 CUDA cores per SM by compute capability; used to turn NVML's core count into an SM count.
_CORES_PER_SM: dict[tuple[int, int], int] = {
    (3, 0): 192, (3, 5): 192, (3, 7): 192,
    (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}
# Plain-words versions of the NVML errors a user is most likely to meet.
_FRIENDLY = {
    "NVMLError_LibraryNotFound": "NVML library (libnvidia-ml.so.1) not found; no NVIDIA driver is installed",
    "NVMLError_DriverNotLoaded": "driver not loaded",
    "NVMLError_NoPermission": "no permission to query the GPU",
    "NVMLError_NotSupported": "not supported",
    "NVMLError_FunctionNotFound": "function not in this driver's NVML",
    "NVMLError_GpuIsLost": "GPU is lost (fell off the bus)",
    "NVMLError_LibRmVersionMismatch": "driver/library version mismatch (reboot after a driver update)",
}


@dataclass(frozen=True)
class NvmlProbe:
    """What NVML said: the GPUs, driver and CUDA versions, and a (probe, reason) note for each failure."""

    gpus: tuple[GpuInfo, ...]
    driver_version: str | None = None
    cuda_version: str | None = None
    notes: tuple[tuple[str, str], ...] = ()


def describe_error(exc: BaseException) -> str:
    """'NVML: driver not loaded (NVMLError_DriverNotLoaded)'-style text for an NVML (or other) exception."""
    name = type(exc).__name__
    friendly = _FRIENDLY.get(name)
    if friendly is None:
        try:
            friendly = str(exc) or name
        except Exception:  # noqa: BLE001 - pynvml's __str__ itself calls into NVML and can raise anything
            friendly = name
    return f"NVML: {friendly} ({name})"


def _text(value: Any) -> str:
    """NVML strings arrive as bytes on older pynvml and str on newer."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def cuda_version_text(version: int) -> str:
    """NVML's integer CUDA driver version (e.g. 12040) as '12.4'."""
    return f"{version // 1000}.{(version % 1000) // 10}"


class _Fields:
    """Reads fields one call at a time, recording a note for each call that fails."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, str]] = []

    def get(self, probe: str, call: Callable[[], T]) -> T | None:
        """`call()`, or None with a note when it raises."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - a fake or future NVML may raise anything; one field must not fail detection
            self.notes.append((probe, describe_error(exc)))
            return None


def _sm_count(nvml: Any, handle: Any, cc: tuple[int, int] | None, prefix: str, fields: _Fields) -> int | None:
    """SM count from NVML device attributes, else NVML's CUDA-core count divided by cores per SM."""
    reasons: list[str] = []
    if hasattr(nvml, "nvmlDeviceGetAttributes"):
        try:
            count = int(nvml.nvmlDeviceGetAttributes(handle).multiprocessorCount)
            if count > 0:
                return count
            reasons.append("device attributes report 0 SMs")
        except Exception as exc:  # noqa: BLE001 - attributes are documented for MIG handles; full GPUs may refuse
            reasons.append(f"device attributes: {describe_error(exc)}")
    else:
        reasons.append("this pynvml has no nvmlDeviceGetAttributes")
    if hasattr(nvml, "nvmlDeviceGetNumGpuCores"):
        try:
            cores = int(nvml.nvmlDeviceGetNumGpuCores(handle))
            per_sm = _CORES_PER_SM.get(cc) if cc else None
            if per_sm and cores > 0 and cores % per_sm == 0:
                return cores // per_sm
            reasons.append(f"{cores} CUDA cores but cores-per-SM unknown for cc {cc}")
        except Exception as exc:  # noqa: BLE001 - see above
            reasons.append(f"core count: {describe_error(exc)}")
    else:
        reasons.append("this pynvml has no nvmlDeviceGetNumGpuCores")
    fields.notes.append((f"{prefix}.sm_count", "; ".join(reasons)))
    return None


def _probe_one(nvml: Any, index: int, fields: _Fields) -> GpuInfo | None:
    """One GPU's fields; None (with a note) only when no handle can be had."""
    prefix = f"nvml.gpu{index}"
    handle = fields.get(f"{prefix}.handle", lambda: nvml.nvmlDeviceGetHandleByIndex(index))
    if handle is None:
        return None
    name = fields.get(f"{prefix}.name", lambda: _text(nvml.nvmlDeviceGetName(handle)))
    memory = fields.get(f"{prefix}.memory", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    raw_cc = fields.get(f"{prefix}.compute_capability", lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    cc = (int(raw_cc[0]), int(raw_cc[1])) if raw_cc is not None else None
    clock_sm = getattr(nvml, "NVML_CLOCK_SM", 1)
    clock = fields.get(f"{prefix}.max_sm_clock", lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, clock_sm)))
    util = fields.get(f"{prefix}.utilization", lambda: int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    return GpuInfo(
        index=index,
        name=name or f"NVIDIA GPU {index}",
        memory_total_bytes=int(memory.total) if memory is not None else None,
        memory_free_bytes=int(memory.free) if memory is not None else None,
        compute_capability=cc,
        sm_count=_sm_count(nvml, handle, cc, prefix, fields),
        max_sm_clock_mhz=clock,
        utilization_pct=util,
    )


def _import_pynvml() -> ModuleType:
    """Import pynvml only when a probe runs, so importing the planner never touches the driver."""
    import pynvml

    return pynvml


def probe_gpus(nvml_module: Any | None = None) -> NvmlProbe:
    """All NVIDIA GPUs NVML can see; with no driver or library, no GPUs and the reason why."""
    if nvml_module is None:
        try:
            nvml_module = _import_pynvml()
        except ImportError as exc:
            reason = f"nvidia-ml-py (pynvml) is not installed: {exc}"
            return NvmlProbe(gpus=(), notes=(("nvml", reason), ("gpu", f"no NVIDIA GPU: {reason}")))
    nvml = nvml_module
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, OSError from ctypes, or a fake's own errors
        reason = describe_error(exc)
        return NvmlProbe(gpus=(), notes=(("nvml", reason), ("gpu", f"no NVIDIA GPU: {reason}")))

    fields = _Fields()
    try:
        driver = fields.get("nvml.driver_version", lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        cuda_call = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or nvml.nvmlSystemGetCudaDriverVersion
        cuda_int = fields.get("nvml.cuda_version", lambda: int(cuda_call()))
        count = fields.get("nvml.device_count", lambda: int(nvml.nvmlDeviceGetCount()))
        gpus = tuple(g for g in (_probe_one(nvml, i, fields) for i in range(count or 0)) if g is not None)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception as exc:  # noqa: BLE001 - a failed shutdown must not hide the results already read
            fields.notes.append(("nvml.shutdown", describe_error(exc)))
    if not gpus:
        why = "NVML initialised but reports 0 devices" if count == 0 else "no device could be read"
        fields.notes.append(("gpu", f"no NVIDIA GPU: {why}"))
    return NvmlProbe(
        gpus=gpus,
        driver_version=driver,
        cuda_version=cuda_version_text(cuda_int) if cuda_int else None,
        notes=tuple(fields.notes),
    )
