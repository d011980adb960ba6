"""Read the numbers the advice needs from a profile (or candidate) dict.

Formatting them for people is planner.units' job, so advice text prints a value exactly as the
report, the CLI and the TUI do.

Every reader tolerates a missing or malformed field by returning None: a partial profile must
still give a partial plan, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from planner import units

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile


@dataclass(frozen=True)
class SweepPoint:
    """One batch size from the throughput sweep: batch latency (p50) and samples per second."""

    batch: int
    latency_ms: float
    samples_per_s: float


def number(value: Any) -> float | None:
    """A finite float from an int/float, else None (booleans are not numbers here)."""
    return units.finite(value)


def mapping(obj: Any, key: str) -> Mapping[str, Any]:
    """obj[key] when both are mappings, else an empty mapping."""
    if not isinstance(obj, Mapping):
        return {}
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def latency(measured: Mapping[str, Any], percentile: str) -> float | None:
    """The measured latency at a percentile ('p50', 'p95', 'p99') in ms, or None."""
    return number(mapping(measured, "latency_ms").get(f"{percentile}_ms"))


def latency_samples(measured: Mapping[str, Any]) -> int | None:
    """How many timed samples the latency statistics rest on."""
    value = number(mapping(measured, "latency_ms").get("samples"))
    return None if value is None else int(value)


def latency_unstable(measured: Mapping[str, Any]) -> bool:
    """Whether the timer flagged the latency measurement as unstable."""
    return bool(mapping(measured, "latency_ms").get("unstable"))


def sweep(measured: Mapping[str, Any]) -> tuple[SweepPoint, ...]:
    """The throughput sweep's complete points, in batch order."""
    raw = measured.get("throughput") if isinstance(measured, Mapping) else None
    points = []
    for item in raw or ():
        if not isinstance(item, Mapping):
            continue
        batch = number(item.get("batch"))
        lat = number(item.get("latency_p50_ms"))
        rate = number(item.get("samples_per_s"))
        if batch is None or lat is None or rate is None or rate <= 0:
            continue
        points.append(SweepPoint(int(batch), lat, rate))
    return tuple(sorted(points, key=lambda p: p.batch))


def best_point(points: tuple[SweepPoint, ...], *, max_latency_ms: float | None = None) -> SweepPoint | None:
    """The highest-throughput point, only among batches whose batch latency is under the limit."""
    eligible = [p for p in points if max_latency_ms is None or p.latency_ms < max_latency_ms]
    if not eligible:
        return None
    return max(eligible, key=lambda p: (p.samples_per_s, -p.batch))


def sweep_text(points: tuple[SweepPoint, ...], *, limit: int = 4) -> str:
    """A short listing of sweep points, first and last always included."""
    if len(points) > limit:
        step = (len(points) - 1) / (limit - 1)
        chosen = [points[round(i * step)] for i in range(limit)]
    else:
        chosen = list(points)
    return "; ".join(f"batch {p.batch}: {units.ms(p.latency_ms)}, {units.rate(p.samples_per_s)}" for p in chosen)


def knee_batch(measured: Mapping[str, Any]) -> int | None:
    """The batch where the sweep's throughput stopped growing, if the profile found one."""
    value = number(measured.get("knee_batch")) if isinstance(measured, Mapping) else None
    return None if value is None else int(value)


def model_size(measured: Mapping[str, Any]) -> int | None:
    """The model's size in bytes (a profile's model.size_bytes or a candidate's size_bytes)."""
    value = number(mapping(measured, "model").get("size_bytes"))
    if value is None and isinstance(measured, Mapping):
        value = number(measured.get("size_bytes"))
    return None if value is None else int(value)


def parameters(measured: Mapping[str, Any]) -> int | None:
    """The model's parameter count, if the profile recorded it."""
    value = number(mapping(measured, "model").get("parameters"))
    return None if value is None else int(value)


def peak_memory(measured: Mapping[str, Any]) -> int | None:
    """Peak memory in bytes during the run."""
    value = number(measured.get("peak_memory_bytes")) if isinstance(measured, Mapping) else None
    return None if value is None else int(value)


def info(measured: Mapping[str, Any]) -> Mapping[str, Any]:
    """The runtime facts the profile recorded (mkldnn, device, precision...)."""
    return mapping(measured, "info")


def precision(measured: Mapping[str, Any]) -> str | None:
    """The precision the measured model computed in, lower-cased."""
    value = info(measured).get("precision") or (measured.get("precision") if isinstance(measured, Mapping) else None)
    return str(value).lower() if value else None


def torch_threads(measured: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(intra-op, inter-op) torch thread counts in force during the run."""
    threads = mapping(measured, "threads")

    def first(*keys: str) -> int | None:
        for key in keys:
            value = number(threads.get(key))
            if value is not None:
                return int(value)
        return None

    # The profile JSON and measure.threads.thread_settings() spell these two ways.
    return (first("torch_intra_op", "torch_intra_op_threads"),
            first("torch_inter_op", "torch_inter_op_threads"))


def env_threads(measured: Mapping[str, Any], name: str) -> int | None:
    """A thread-count environment variable (e.g. OMP_NUM_THREADS) recorded with the run."""
    raw = mapping(measured, "threads").get(name)
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    value = number(raw)
    return None if value is None else int(value)


def layers_by_time(measured: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The profiled layers, slowest first."""
    raw = measured.get("layers") if isinstance(measured, Mapping) else None
    rows = [row for row in raw or () if isinstance(row, Mapping) and number(row.get("time_ms")) is not None]
    return sorted(rows, key=lambda row: -float(row["time_ms"]))


def input_shape(measured: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The input shape the model was profiled with."""
    raw = measured.get("input_shape") if isinstance(measured, Mapping) else None
    if isinstance(raw, (list, tuple)) and all(number(v) is not None for v in raw):
        return tuple(int(v) for v in raw)
    return None


def bottleneck(measured: Mapping[str, Any]) -> str | None:
    """'compute', 'memory' or 'overhead' when the profile classified the run."""
    bound = mapping(measured, "bottleneck").get("bound")
    return str(bound) if bound else None


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
