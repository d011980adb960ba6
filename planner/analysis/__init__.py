"""Model analysis: per-layer FLOPs/bytes/time, roofline verdicts, bottleneck classes, architecture lint."""

from planner.analysis.bottlenecks import (
    Bottleneck,
    BottleneckClass,
    BottleneckGroup,
    BottleneckSummary,
    classify_bottlenecks,
)
from planner.analysis.findings import Finding, Severity
from planner.analysis.graph import Dataflow
from planner.analysis.layers import (
    FunctionalOp,
    LayerReport,
    LayerStats,
    analyze_layers,
)
from planner.analysis.lint import lint
from planner.analysis.roofline import (
    OVERHEAD_FACTOR,
    Bound,
    CeilingsLike,
    LayerVerdict,
    RooflineVerdict,
    classify,
    layer_verdicts,
    model_verdict,
)

__all__ = [
    "OVERHEAD_FACTOR", "Bottleneck", "BottleneckClass", "BottleneckGroup", "BottleneckSummary",
    "Bound", "CeilingsLike", "Dataflow", "Finding", "FunctionalOp", "LayerReport", "LayerStats",
    "LayerVerdict", "RooflineVerdict", "Severity", "analyze_layers", "classify",
    "classify_bottlenecks", "layer_verdicts", "lint", "model_verdict",
]
