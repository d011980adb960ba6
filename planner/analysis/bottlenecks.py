"""The three bottleneck classes (memory-bound, compute-bound, throughput-limited) from roofline verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from planner import units
from planner.analysis.layers import LayerReport
from planner.analysis.roofline import (
    OVERHEAD_FACTOR,
    TINY_CALL_S,
    Bound,
    CeilingsLike,
    LayerVerdict,
    classify,
)
from planner.results.analysis import BottleneckClassesRecord, BottleneckGroupRecord, BottleneckRecord


class BottleneckClass(StrEnum):
    """The three kinds of bottleneck, each with its own family of fixes."""

    MEMORY_BOUND = "memory-bound"
    COMPUTE_BOUND = "compute-bound"
    THROUGHPUT_LIMITED = "throughput-limited"


_FROM_BOUND = {
    Bound.MEMORY: BottleneckClass.MEMORY_BOUND,
    Bound.COMPUTE: BottleneckClass.COMPUTE_BOUND,
    Bound.OVERHEAD: BottleneckClass.THROUGHPUT_LIMITED,
}


@dataclass(frozen=True)
class Bottleneck:
    """One layer call in a bottleneck class, with the sentence that explains it."""

    layer: str
    type: str
    time_ms: float | None
    time_share: float | None
    cause: str
    verdict: LayerVerdict

    def record(self) -> BottleneckRecord:
        """This entry as results.json holds it: the verdict's numbers, not the layer again."""
        return BottleneckRecord(layer=self.layer, type=self.type, time_ms=self.time_ms, time_share=self.time_share,
                                cause=self.cause, verdict=self.verdict.verdict.record())


@dataclass(frozen=True)
class BottleneckGroup:
    """All layers of one class: how many, how much time, and the top few by time."""

    kind: BottleneckClass
    layer_count: int
    time_ms: float | None
    time_share: float | None
    top: tuple[Bottleneck, ...]

    def record(self) -> BottleneckGroupRecord:
        """This group as results.json holds it."""
        return BottleneckGroupRecord(kind=str(self.kind), layer_count=self.layer_count, time_ms=self.time_ms,
                                     time_share=self.time_share, top=tuple(b.record() for b in self.top))


@dataclass(frozen=True)
class BottleneckSummary:
    """The three groups (always all three, possibly empty) and what they were ranked by."""

    groups: tuple[BottleneckGroup, ...]
    ranked_by: str

    def group(self, kind: BottleneckClass | str) -> BottleneckGroup:
        """The group of this class."""
        for g in self.groups:
            if g.kind == kind:
                return g
        raise KeyError(kind)

    def record(self) -> BottleneckClassesRecord:
        """The summary as results.json holds it."""
        return BottleneckClassesRecord(ranked_by=self.ranked_by, groups=tuple(g.record() for g in self.groups))


def cause_sentence(lv: LayerVerdict) -> str:
    """Why this layer sits in its class, in numbers, and which family of fixes applies."""
    v = lv.verdict
    layer = lv.layer
    timed = f" of {units.ms(v.measured_time_s * 1e3)} measured" if v.measured_time_s else ""
    if v.ceiling_warning:
        timed += f" ({v.ceiling_warning})"
    if not v.stable:
        timed += f" (unstable: {v.unstable_reason})"
    if v.bound == Bound.MEMORY:
        work = (f"for {units.flops(v.flops)}" if v.flops else
                "with no counted FLOPs (FlopCounterMode counts matmuls and convs, not elementwise work)")
        return (f"{layer.type} moves {units.size(v.bytes_moved)} {work} "
                f"(intensity {units.ratio(v.intensity)} < ridge {units.ratio(v.ridge_point)} FLOP/B): the bandwidth "
                f"floor is {units.ms(v.memory_time_s * 1e3)}{timed}; cut bytes (fuse into the neighbouring "
                "layer, narrower or smaller maps, lower precision)")
    if v.bound == Bound.COMPUTE:
        return (f"{layer.type} does {units.flops(v.flops)} (2 per multiply-add) at intensity "
                f"{units.ratio(v.intensity)} >= ridge {units.ratio(v.ridge_point)} FLOP/B: the compute floor is "
                f"{units.ms(v.compute_time_s * 1e3)}{timed}; cut FLOPs (smaller kernels, depthwise-separable "
                "convs, fewer channels) or use faster math (fp16/int8)")
    measured = v.measured_time_s or 0.0
    ratio = units.speedup(measured / v.floor_time_s) if v.floor_time_s else "far above"
    if measured < TINY_CALL_S:
        why = (f"the call is tiny ({units.ms(measured * 1e3)}), so launch and framework overhead sets its time; "
               "fuse it with its neighbours, batch more work per call, or capture the graph "
               "(CUDA graphs, torch.compile)")
    else:
        why = ("the kernel is poorly parallel or untuned for this shape, not short of bandwidth or "
               "math; fuse it, change its shape (stride, channels) or try another runtime's kernel")
    return (f"{layer.type} takes {units.ms(measured * 1e3)}, {ratio} its roofline floor of "
            f"{units.ms(v.floor_time_s * 1e3)}: {why}")


def classify_bottlenecks(report: LayerReport, ceilings: CeilingsLike, *, precision: str = "fp32",
                         top: int = 3, overhead_factor: float = OVERHEAD_FACTOR,
                         unstable_reason: str | None = None) -> BottleneckSummary:
    """Group every layer call into the bottleneck classes and list the top `top` of each by time."""
    verdicts = [
        LayerVerdict(layer, classify(layer.flops, layer.bytes_moved,
                                     None if layer.time_ms is None else layer.time_ms / 1e3,
                                     ceilings, precision=precision, overhead_factor=overhead_factor,
                                     label=layer.key, unstable_reason=unstable_reason))
        for layer in report.layers
    ]
    timed = report.has_time
    ranked_by = "measured time" if timed else "roofline floor time (not measured)"

    def weight(lv: LayerVerdict) -> float:
        if timed:
            return lv.verdict.measured_time_s or 0.0
        return lv.verdict.floor_time_s

    groups = []
    for kind in BottleneckClass:
        members = sorted((lv for lv in verdicts if _FROM_BOUND[lv.verdict.bound] == kind),
                         key=weight, reverse=True)
        time_ms = sum(lv.layer.time_ms or 0.0 for lv in members) if timed else None
        share = (sum(lv.layer.time_share or 0.0 for lv in members) if timed else None)
        groups.append(BottleneckGroup(
            kind=kind, layer_count=len(members), time_ms=time_ms, time_share=share,
            top=tuple(Bottleneck(layer=lv.layer.key, type=lv.layer.type, time_ms=lv.layer.time_ms,
                                 time_share=lv.layer.time_share, cause=cause_sentence(lv), verdict=lv)
                      for lv in members[:top]),
        ))
    return BottleneckSummary(groups=tuple(groups), ranked_by=ranked_by)
