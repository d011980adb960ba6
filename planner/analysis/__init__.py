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
from planner.analysis.lint import advice_target, lint, ranked
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
from planner.analysis.rules import overhead_bound

__all__ = [
    "OVERHEAD_FACTOR", "Bottleneck", "BottleneckClass", "BottleneckGroup", "BottleneckSummary",
    "Bound", "CeilingsLike", "Dataflow", "Finding", "FunctionalOp", "LayerReport", "LayerStats",
    "LayerVerdict", "RooflineVerdict", "Severity", "advice_target", "analyze_layers", "classify",
    "classify_bottlenecks", "layer_verdicts", "lint", "model_verdict", "overhead_bound", "ranked",
]
