"""Roofline verdicts: is a layer (or the whole model) compute-, memory- or overhead-bound?"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from planner import units
from planner.analysis.layers import LayerReport, LayerStats
from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.results.analysis import VerdictRecord

OVERHEAD_FACTOR = 10.0
"""Measured time above this multiple of the larger roofline floor reads as overhead-bound.

A kernel that runs 10x slower than both its compute and its bandwidth floor is not limited by
either: launch latency, framework dispatch and small, poorly parallel work dominate (also called
"throughput-limited"). Below 10x, cache effects and imperfect kernels explain the gap.
"""

TINY_CALL_S = 50e-6
"""A call under 50 us is dominated by launch and dispatch cost (a CUDA launch alone is ~5-10 us)."""

OVERHEAD_PER_OP_S = 100e-6
"""A whole model averaging under 100 us per layer call spends its time dispatching many small ops."""

TINY_SHARE_EVIDENCE = 0.5
"""Half the layer time in tiny calls is evidence of overhead for the whole model."""

GPU_IDLE_EVIDENCE = 0.3
"""A GPU idle for 30% of the run between kernels is waiting on the host: overhead."""

MIN_VERDICT_SAMPLES = 5
"""A whole-model verdict from fewer timed samples than this is marked unstable.

Five is the fewest for which an interquartile range (the spread test that follows) means anything;
a quick profile takes about six.
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
    stable: bool = True
    unstable_reason: str = ""
    ceiling_warning: str = ""
    overhead_evidence: str = ""

    @property
    def floor_time_s(self) -> float:
        """The roofline's lower bound on time: the larger of the compute and memory times."""
        return max(self.compute_time_s, self.memory_time_s)

    def record(self) -> VerdictRecord:
        """This verdict as results.json holds it (an infinite intensity, where nothing was moved, as None)."""
        return VerdictRecord(
            bound=str(self.bound), flops=self.flops, bytes_moved=self.bytes_moved,
            intensity=self.intensity if math.isfinite(self.intensity) else None, ridge_point=self.ridge_point,
            precision=self.precision, compute_time_s=self.compute_time_s, memory_time_s=self.memory_time_s,
            measured_time_s=self.measured_time_s, attained_flops_per_s=self.attained_flops_per_s,
            efficiency=self.efficiency, explanation=self.explanation, stable=self.stable,
            unstable_reason=self.unstable_reason, ceiling_warning=self.ceiling_warning,
            overhead_evidence=self.overhead_evidence)


@dataclass(frozen=True)
class LayerVerdict:
    """A layer call and its roofline verdict."""

    layer: LayerStats
    verdict: RooflineVerdict


def classify(flops: float, bytes_moved: float, time_s: float | None, ceilings: CeilingsLike, *,
             precision: str = "fp32", overhead_factor: float = OVERHEAD_FACTOR,
             label: str = "", overhead_evidence: str | None = None,
             unstable_reason: str | None = None) -> RooflineVerdict:
    """Classify work as compute-, memory- or overhead-bound against a machine's ceilings.

    Overhead-bound needs evidence besides a time far above the floor: a tiny call (under
    `TINY_CALL_S`) or the caller's `overhead_evidence` (many small ops, GPU idle gaps). Without it
    the verdict stays compute- or memory-bound by intensity and is marked unstable, since a slow
    sample (other processes, throttling) looks the same. A time below a roofline floor means the
    ceiling was wrong, so the floor shown is capped at the measured time and no efficiency above
    100% is given; `ceiling_warning` says why.
    """
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
    roof = "compute" if intensity >= ridge else "memory"
    prefix = f"{label}: " if label else ""
    timed = time_s is not None and time_s > 0
    warning = ""
    if timed and time_s is not None and compute_s > time_s:
        # Faster than the peak is impossible: the ceiling was low (measured while busy), not the work fast.
        warning = EXCEEDED_WARNING
        compute_s = time_s
    if timed and time_s is not None and memory_s > time_s:
        if not warning:
            warning = ("moved data faster than the measured memory bandwidth: its data stayed in cache, so the "
                       "memory floor is shown at the measured time")
        memory_s = time_s
    floor_s = max(compute_s, memory_s)
    facts = (f"{prefix}{units.flops(flops)} (2 per multiply-add) over {units.size(bytes_moved)} moved "
             f"= {units.ratio(intensity)} FLOP/B vs ridge {units.ratio(ridge)} FLOP/B ({precision}); "
             f"compute floor {units.ms(compute_s * 1e3)}, memory floor {units.ms(memory_s * 1e3)}")
    if not timed or time_s is None:
        bound = Bound.COMPUTE if roof == "compute" else Bound.MEMORY
        return RooflineVerdict(
            bound=bound, flops=int(flops), bytes_moved=int(bytes_moved), intensity=intensity,
            ridge_point=ridge, precision=precision, compute_time_s=compute_s, memory_time_s=memory_s,
            measured_time_s=None, attained_flops_per_s=None, efficiency=None,
            explanation=f"{facts}; not timed, so {roof}-bound by intensity alone",
        )
    attained = flops / time_s
    efficiency: float | None = min(1.0, floor_s / time_s)
    if warning:
        measured = f"; measured {units.ms(time_s * 1e3)} attains {units.flop_rate(attained)} ({warning})"
    else:
        measured = (f"; measured {units.ms(time_s * 1e3)} attains {units.flop_rate(attained)} "
                    f"({units.pct(efficiency)} of the roofline bound)")
    reasons = [unstable_reason] if unstable_reason else []
    evidence = overhead_evidence or (f"a tiny call ({units.ms(time_s * 1e3)}, under "
                                     f"{units.ms(TINY_CALL_S * 1e3)})" if time_s < TINY_CALL_S else "")
    far = floor_s == 0 or time_s > overhead_factor * floor_s
    ratio = "no roofline floor" if floor_s == 0 else f"{units.speedup(time_s / floor_s)} the larger floor"
    if far and evidence:
        bound = Bound.OVERHEAD
        why = (f" -> overhead-bound: {ratio} (> {overhead_factor:g}x) with {evidence}, so launch/framework "
               f"overhead, not {roof} throughput, sets the time (also called throughput-limited)")
    else:
        bound = Bound.COMPUTE if roof == "compute" else Bound.MEMORY
        why = (f" -> {roof}-bound: intensity {'at or above' if roof == 'compute' else 'below'} "
               "the ridge point")
        if far:
            reasons.append(f"measured {ratio} with no sign of overhead (few, long calls), which a slow sample "
                           "(other processes, throttling) or an untuned kernel explains; re-run on an idle "
                           "machine before acting on it")
            efficiency = None  # an efficiency from a sample that may be slowed by others is not a fact
    reason = "; ".join(reasons)
    if reason:
        why += f" [unstable: {reason}]"
    return RooflineVerdict(
        bound=bound, flops=int(flops), bytes_moved=int(bytes_moved), intensity=intensity,
        ridge_point=ridge, precision=precision, compute_time_s=compute_s, memory_time_s=memory_s,
        measured_time_s=time_s, attained_flops_per_s=attained, efficiency=efficiency,
        explanation=facts + measured + why, stable=not reason, unstable_reason=reason,
        ceiling_warning=warning, overhead_evidence=evidence if bound == Bound.OVERHEAD else "",
    )


def measurement_instability(stats: object | None) -> str | None:
    """Why a latency measurement cannot carry a verdict (too few samples, too much spread), or None.

    `stats` is anything with `samples`, `unstable` and `iqr_over_median` (the results' LatencyStats).
    """
    if stats is None:
        return None
    samples = getattr(stats, "samples", None)
    if isinstance(samples, int) and samples < MIN_VERDICT_SAMPLES:
        return f"only {samples} timed samples (a verdict needs {MIN_VERDICT_SAMPLES})"
    if getattr(stats, "unstable", False):
        spread = getattr(stats, "iqr_over_median", None)
        amount = f" (IQR {units.pct(spread)} of the median, over 10%)" if isinstance(spread, float) else ""
        return f"the timed samples spread too widely{amount}"
    return None


def overhead_evidence(report: LayerReport, time_s: float | None, *,
                      gpu_idle_share: float | None = None) -> str | None:
    """Evidence that dispatch overhead sets a whole model's time, in words, or None when there is none.

    Evidence is many small ops (under `OVERHEAD_PER_OP_S` per layer call on average, or half the
    layer time in calls under `TINY_CALL_S`) or a GPU idle between kernels for `GPU_IDLE_EVIDENCE`
    of the run. A slow sample of a few long ops is not evidence.
    """
    found = []
    calls = len(report.layers)
    if time_s and calls:
        per_op = time_s / calls
        if per_op < OVERHEAD_PER_OP_S:
            found.append(f"{calls} layer calls averaging {units.ms(per_op * 1e3)} each")
    timed = [layer.time_ms for layer in report.layers if layer.time_ms is not None]
    total = sum(timed)
    if total > 0:
        tiny = sum(t for t in timed if t / 1e3 < TINY_CALL_S) / total
        if tiny >= TINY_SHARE_EVIDENCE:
            found.append(f"{units.pct(tiny)} of layer time in calls under {units.ms(TINY_CALL_S * 1e3)}")
    if gpu_idle_share is not None and gpu_idle_share >= GPU_IDLE_EVIDENCE:
        found.append(f"the GPU idle {units.pct(gpu_idle_share)} of the run between kernels")
    return "; ".join(found) or None


def model_verdict(report: LayerReport, latency_s: float | None, ceilings: CeilingsLike, *,
                  precision: str = "fp32", overhead_factor: float = OVERHEAD_FACTOR,
                  stats: object | None = None, interference: str | None = None,
                  gpu_idle_share: float | None = None) -> RooflineVerdict:
    """The whole model's verdict: all FLOPs and all bytes moved (no cache reuse between layers).

    `stats` (the latency's LatencyStats) and `interference` (what other processes did during the
    run) mark the verdict unstable when the measurement cannot carry it.
    """
    reasons = [r for r in (measurement_instability(stats), interference) if r]
    return classify(report.total_flops, report.total_bytes_moved, latency_s, ceilings,
                    precision=precision, overhead_factor=overhead_factor, label="model",
                    overhead_evidence=overhead_evidence(report, latency_s, gpu_idle_share=gpu_idle_share),
                    unstable_reason="; ".join(reasons) or None)


def layer_verdicts(report: LayerReport, ceilings: CeilingsLike, *, precision: str = "fp32",
                   overhead_factor: float = OVERHEAD_FACTOR,
                   unstable_reason: str | None = None) -> list[LayerVerdict]:
    """A verdict for every layer call with a measured time, in execution order."""
    return [
        LayerVerdict(layer, classify(layer.flops, layer.bytes_moved, layer.time_ms / 1e3, ceilings,
                                     precision=precision, overhead_factor=overhead_factor,
                                     label=layer.key, unstable_reason=unstable_reason))
        for layer in report.layers
        if layer.time_ms is not None
    ]
