"""The readings the advice needs: a result's numbers through the lenient readers the report shares
(planner.results.view), and the hardware facts the checklist and decision trees ask about.

Formatting them for people is planner.units' job, so advice text prints a value exactly as the
report, the CLI and the TUI do. Every reader tolerates a missing or malformed field by returning
None: a partial profile must still give a partial plan, never a crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner import units
from planner.results.values import ThroughputPoint
from planner.results.view import (
    best_point,
    bottleneck,
    env_threads,
    info,
    input_shape,
    knee_batch,
    latency_samples,
    latency_unstable,
    layers_by_time,
    mapping,
    model_size,
    number,
    parameters,
    peak_memory,
    percentile_ms,
    precision,
    sweep,
    torch_threads,
)

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

__all__ = ["ONNX_ONLY", "ThroughputPoint", "best_point", "bottleneck", "cpu_has", "cpu_vendor", "device_class",
           "env_threads", "first_gpu", "gpu_tensor_cores", "info", "input_shape", "is_intel", "knee_batch", "latency",
           "latency_samples", "latency_unstable", "layers_by_time", "mapping", "memory_available", "memory_total",
           "model_size", "number", "onnx_only", "parameters", "peak_memory", "precision", "sweep", "sweep_text",
           "torch_threads"]

latency = percentile_ms
"""The measured latency at a percentile ('p50', 'p95', 'p99') in ms, or None."""


def sweep_text(points: tuple[ThroughputPoint, ...], *, limit: int = 4) -> str:
    """A short listing of sweep points, first and last always included."""
    if len(points) > limit:
        step = (len(points) - 1) / (limit - 1)
        chosen = [points[round(i * step)] for i in range(limit)]
    else:
        chosen = list(points)
    return "; ".join(f"batch {p.batch}: {units.ms(p.latency_p50_ms)}, {units.rate(p.samples_per_s)}"
                     for p in chosen)


ONNX_ONLY = "the model is ONNX only (no PyTorch module)"
"""Why a PyTorch setting does not apply to a model given as an ONNX file, in the words every such answer uses."""


def onnx_only(baseline: Any) -> bool:
    """Whether the model came as an ONNX file, so no PyTorch module runs it (the loader keeps none for one).

    Read from the baseline's model record (`kind`), which every baseline since the first has written.
    """
    return str(mapping(baseline, "model").get("kind") or "").lower() == "onnx"


def device_class(hw: HardwareProfile) -> str:
    """The hardware's device class as its plain string value."""
    value = getattr(hw, "device_class", "")
    return str(getattr(value, "value", value))


def first_gpu(hw: HardwareProfile) -> Any | None:
    """The first GPU of the hardware profile, or None."""
    gpus = getattr(hw, "gpus", ()) or ()
    return gpus[0] if gpus else None


def gpu_tensor_cores(gpu: Any) -> str | None:
    """The GPU's tensor-core generation (attribute or property), or None."""
    return getattr(gpu, "tensor_core_generation", None) if gpu is not None else None


def cpu_has(hw: HardwareProfile, feature: str) -> bool:
    """Whether the host CPU reports an ISA feature; False when unknown."""
    cpu = getattr(hw, "cpu", None)
    has = getattr(cpu, "has", None)
    return bool(has(feature)) if callable(has) else False


def cpu_vendor(hw: HardwareProfile) -> str:
    """The CPU vendor string as reported, '' when unknown."""
    return str(getattr(getattr(hw, "cpu", None), "vendor", "") or "")


def is_intel(hw: HardwareProfile) -> bool:
    """True for an Intel CPU."""
    vendor = cpu_vendor(hw).lower()
    return "intel" in vendor


def memory_available(hw: HardwareProfile) -> int | None:
    """What the process can allocate: usable/available RAM, else total."""
    memory = getattr(hw, "memory", None)
    for attr in ("usable_bytes", "available_bytes", "total_bytes"):
        value = number(getattr(memory, attr, None))
        if value is not None:
            return int(value)
    return None


def memory_total(hw: HardwareProfile) -> int | None:
    """Total RAM in bytes, when known."""
    value = number(getattr(getattr(hw, "memory", None), "total_bytes", None))
    return None if value is None else int(value)
