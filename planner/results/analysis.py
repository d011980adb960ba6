"""The baseline's layer analysis as results.json holds it, typed: each layer call, its roofline verdict, the
bottleneck classes and the architecture findings.

The analysis (planner.analysis, which needs torch) makes these from its own working types; everything after it
(the TUI, the report, the advice) reads these, without torch. Every field has a default, so a file written by an
earlier planner, which recorded fewer facts, still reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec

FLOPS_UNIT = "FLOPs (2 per MAC)"
"""What a FLOP count counts: a multiply-add is two."""


@dataclass(frozen=True)
class LayerRecord:
    """One call of a leaf module (a module called twice is two records): what it computed, moved and took."""

    key: str = ""  # the module path, with `#n` for the n-th call of a reused module
    name: str = ""
    type: str = ""
    call: int = 1
    index: int = 0
    input_shapes: tuple[tuple[int, ...], ...] = ()
    output_shape: tuple[int, ...] = ()
    params: int = 0
    flops: int = 0
    bytes_moved: int = 0
    intensity: float = 0.0  # FLOPs per byte moved
    activation_bytes: int = 0
    inputs_from: tuple[str, ...] = ()
    time_ms: float | None = None
    time_share: float | None = None


@dataclass(frozen=True)
class VerdictRecord:
    """A roofline verdict: what bounds the work (compute, memory or per-call overhead) and the numbers behind it."""

    bound: str | None = None  # None: not analysed (an ONNX-only model), `explanation` says why
    flops: int = 0
    flops_unit: str = FLOPS_UNIT
    bytes_moved: int = 0
    intensity: float | None = None  # None where nothing was moved (an infinite intensity)
    ridge_point: float | None = None
    precision: str = "fp32"
    compute_time_s: float | None = None
    memory_time_s: float | None = None
    measured_time_s: float | None = None
    attained_flops_per_s: float | None = None
    efficiency: float | None = None  # attained over the roof, 0-1
    explanation: str = ""
    stable: bool = True
    unstable_reason: str = ""
    ceiling_warning: str = ""
    overhead_evidence: str = ""


@dataclass(frozen=True)
class BottleneckRecord:
    """One layer call in a bottleneck class, with the sentence that explains it."""

    layer: str = ""
    type: str = ""
    time_ms: float | None = None
    time_share: float | None = None
    cause: str = ""
    verdict: VerdictRecord = field(default_factory=VerdictRecord)


class BottleneckGroupRecord(msgspec.Struct, frozen=True, kw_only=True):
    """All layers of one bottleneck class: how many, how much time, and the top few by time (`class` in JSON)."""

    kind: str = msgspec.field(default="", name="class")
    layer_count: int = 0
    time_ms: float | None = None
    time_share: float | None = None
    top: tuple[BottleneckRecord, ...] = ()


@dataclass(frozen=True)
class BottleneckClassesRecord:
    """The three bottleneck classes (always all three, possibly empty) and what they were ranked by."""

    ranked_by: str = ""
    groups: tuple[BottleneckGroupRecord, ...] = ()


class Severity(StrEnum):
    """How much a finding is worth acting on."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One issue with the layers involved, the numbers, its impact and the advice.

    `advice` is for the hardware the profile ran on; `advice_by_target` holds the advice for each
    target where it differs (a plan for another target picks its own). `category` is
    "architecture" for changes to the model itself, "runtime" for what a runtime or its settings fix.
    `exact`: the change it asks for is an exact rewrite (the same outputs, no retraining: BatchNorm folded,
    channels padded with zeros); an architecture change that is not exact needs retraining. False in files
    written before findings said so.
    """

    id: str
    title: str
    severity: Severity
    layers: tuple[str, ...]
    evidence: dict[str, Any] = field(default_factory=dict)
    impact: float = 0.0
    impact_basis: str = ""
    advice: str = ""
    advice_by_target: dict[str, Any] = field(default_factory=dict)
    category: str = "architecture"
    exact: bool = False
