"""Roofline verdicts: is a layer (or the whole model) compute-, memory- or overhead-bound?"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from planner import units
from planner.analysis.layers import LayerReport, LayerStats

OVERHEAD_FACTOR = 10.0
"""Measured time above this multiple of the larger roofline floor reads as overhead-bound.

A kernel that runs 10x slower than both its compute and its bandwidth floor is not limited by
either: launch latency, framework dispatch and small, poorly parallel work dominate (also called
"throughput-limited"). Below 10x, cache effects and imperfect kernels explain the gap.
"""


@runtime_checkable
class CeilingsLike(Protocol):
    """Anything with peak FLOP/s per precision and memory bandwidth (planner.hardware's Ceilings fits)."""

    # Read-only properties, so that frozen dataclasses (Ceilings) satisfy the protocol.
    @property
    def peak_flops(self) -> dict[str, float]:
        """Peak FLOP/s per precision name."""
        ...

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Memory bandwidth in bytes per second."""
        ...

    def peak(self, precision: str = "fp32") -> float:
        """Peak FLOP/s (2 per MAC) at this precision."""
        ...

    def ridge_point(self, precision: str = "fp32") -> float:
        """Intensity (FLOP/byte) where the compute and memory roofs meet."""
        ...


class Bound(StrEnum):
    """What limits a piece of work on a given machine."""

    COMPUTE = "compute"
    MEMORY = "memory"
    OVERHEAD = "overhead"


@dataclass(frozen=True)
class RooflineVerdict:
    """A roofline classification with the numbers behind it."""

    bound: Bound
    flops: int
    bytes_moved: int
    intensity: float
    ridge_point: float
    precision: str
    compute_time_s: float
    memory_time_s: float
    measured_time_s: float | None
    attained_flops_per_s: float | None
    efficiency: float | None
    explanation: str

    @property
    def floor_time_s(self) -> float:
        """The roofline's lower bound on time: the larger of the compute and memory times."""
        return max(self.compute_time_s, self.memory_time_s)

    # Kept: the JSON adds `flops_unit` and writes an infinite intensity as null.
    def to_dict(self) -> dict:
        """A JSON-ready dict of this verdict."""
        return {
            "bound": str(self.bound), "flops": self.flops, "flops_unit": "FLOPs (2 per MAC)",
            "bytes_moved": self.bytes_moved,
            "intensity": self.intensity if math.isfinite(self.intensity) else None,
            "ridge_point": self.ridge_point, "precision": self.precision,
            "compute_time_s": self.compute_time_s, "memory_time_s": self.memory_time_s,
            "measured_time_s": self.measured_time_s,
            "attained_flops_per_s": self.attained_flops_per_s, "efficiency": self.efficiency,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class LayerVerdict:
    """A layer call and its roofline verdict."""

    layer: LayerStats
    verdict: RooflineVerdict

    # Kept: the JSON flattens the layer's key and type into the verdict's keys.
    def to_dict(self) -> dict:
        """A JSON-ready dict: the layer's key and type with the verdict."""
        return {"layer": self.layer.key, "type": self.layer.type, **self.verdict.to_dict()}


def classify(flops: float, bytes_moved: float, time_s: float | None, ceilings: CeilingsLike, *,
             precision: str = "fp32", overhead_factor: float = OVERHEAD_FACTOR,
             label: str = "") -> RooflineVerdict:
    """Classify work as compute-, memory- or overhead-bound against a machine's ceilings."""
    if overhead_factor <= 1.0:
        raise ValueError("overhead_factor must be above 1 (it multiplies the roofline floor)")
    peak = float(ceilings.peak(precision))
    bandwidth = float(ceilings.bandwidth_bytes_per_s)
    if peak <= 0 or bandwidth <= 0:
        raise ValueError(f"ceilings must be positive (peak {peak} FLOP/s, bandwidth {bandwidth} B/s)")
    ridge = float(ceilings.ridge_point(precision))
    intensity = flops / bytes_moved if bytes_moved else math.inf
    compute_s = flops / peak
    memory_s = bytes_moved / bandwidth
    floor_s = max(compute_s, memory_s)
    roof = "compute" if intensity >= ridge else "memory"
    prefix = f"{label}: " if label else ""
    facts = (f"{prefix}{units.flops(flops)} (2 per multiply-add) over {units.size(bytes_moved)} moved "
             f"= {units.ratio(intensity)} FLOP/B vs ridge {units.ratio(ridge)} FLOP/B ({precision}); "
             f"compute floor {units.ms(compute_s * 1e3)}, memory floor {units.ms(memory_s * 1e3)}")
    if time_s is None or time_s <= 0:
        bound = Bound.COMPUTE if roof == "compute" else Bound.MEMORY
        return RooflineVerdict(
            bound=bound, flops=int(flops), bytes_moved=int(bytes_moved), intensity=intensity,
            ridge_point=ridge, precision=precision, compute_time_s=compute_s, memory_time_s=memory_s,
            measured_time_s=None, attained_flops_per_s=None, efficiency=None,
            explanation=f"{facts}; not timed, so {roof}-bound by intensity alone",
        )
    efficiency = floor_s / time_s
    attained = flops / time_s
    measured = (f"; measured {units.ms(time_s * 1e3)} attains {units.flop_rate(attained)} "
                f"({units.pct(efficiency)} of the roofline bound)")
    if floor_s == 0 or time_s > overhead_factor * floor_s:
        bound = Bound.OVERHEAD
        ratio = "no roofline floor" if floor_s == 0 else f"{units.speedup(time_s / floor_s)} the larger floor"
        why = (f" -> overhead-bound: {ratio} (> {overhead_factor:g}x), so launch/framework "
               f"overhead or a poorly parallel kernel, not {roof} throughput, sets the time "
               "(also called throughput-limited)")
    else:
        bound = Bound.COMPUTE if roof == "compute" else Bound.MEMORY
        why = (f" -> {roof}-bound: intensity {'at or above' if roof == 'compute' else 'below'} "
               "the ridge point")
    return RooflineVerdict(
        bound=bound, flops=int(flops), bytes_moved=int(bytes_moved), intensity=intensity,
        ridge_point=ridge, precision=precision, compute_time_s=compute_s, memory_time_s=memory_s,
        measured_time_s=time_s, attained_flops_per_s=attained, efficiency=efficiency,
        explanation=facts + measured + why,
    )


def model_verdict(report: LayerReport, latency_s: float | None, ceilings: CeilingsLike, *,
                  precision: str = "fp32", overhead_factor: float = OVERHEAD_FACTOR) -> RooflineVerdict:
    """The whole model's verdict: all FLOPs and all bytes moved (no cache reuse between layers)."""
    return classify(report.total_flops, report.total_bytes_moved, latency_s, ceilings,
                    precision=precision, overhead_factor=overhead_factor, label="model")


def layer_verdicts(report: LayerReport, ceilings: CeilingsLike, *, precision: str = "fp32",
                   overhead_factor: float = OVERHEAD_FACTOR) -> list[LayerVerdict]:
    """A verdict for every layer call with a measured time, in execution order."""
    return [
        LayerVerdict(layer, classify(layer.flops, layer.bytes_moved, layer.time_ms / 1e3, ceilings,
                                     precision=precision, overhead_factor=overhead_factor,
                                     label=layer.key))
        for layer in report.layers
        if layer.time_ms is not None
    ]
