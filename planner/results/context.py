"""What a plan ran with and on, beside what it measured: the environment, the loaded model, and an edge
board's projection of the candidates.

Each is a frozen dataclass whose JSON form (through `planner.codec`) is exactly the object results.json
has always held for it, keys in the same order, so readers of the JSON see no change. Every field has a
default so that files written before a field existed still load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.hardware.boards import EdgeProfile


@dataclass(frozen=True)
class Environment:
    """The versions and settings that affect the numbers, recorded when the plan started."""

    planner: str = ""
    python: str = ""
    platform: str = ""
    packages: dict[str, str | None] = field(default_factory=dict)  # None: not installed
    env: dict[str, str] = field(default_factory=dict)  # the thread and device variables that were set
    date: str = ""  # when the plan started, ISO 8601 with the local offset


@dataclass(frozen=True)
class ModelDescription:
    """The loaded model as `LoadedModel.describe()` gives it (what `planner inspect --json` prints).

    The baseline keeps a shorter `ModelSummary` of the same model; this one also says how it is fed
    (its inputs) and run.
    """

    source: str = ""
    kind: str = ""
    name: str = ""
    parameters: int | None = None
    size_bytes: int | None = None
    inputs: tuple[dict[str, Any], ...] = ()  # each input: its TensorSpec fields and `values` (how they are drawn)
    dynamic_batch: bool | None = None  # None in files written before it was recorded
    output_shape: tuple[int, ...] = ()
    runtime: str = ""
    onnx_path: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class EdgeCandidate:
    """One measured candidate projected onto an edge board: a roofline estimate, never a measurement there.

    The first four fields are the candidate as measured here; the rest are
    `planner.hardware.boards.project`'s estimate, whose `basis` says how it was made.
    """

    label: str
    precision: str = ""
    measured_p50_ms: float | None = None
    size_bytes: int | None = None  # the file on disk (the baseline's for a candidate that keeps its weights)
    device: str = ""  # the board's profile name
    estimate_ms: float | None = None  # the larger of compute_ms and memory_ms: a lower bound on latency
    compute_ms: float | None = None
    memory_ms: float | None = None
    bound: str = ""  # "compute" or "memory"; '' with no estimate
    fits_latency_budget: bool | None = None
    fits_size_budget: bool | None = None
    basis: str = ""


@dataclass(frozen=True)
class EdgeProjection:
    """An edge board's datasheet profile and each measured candidate projected onto it."""

    profile: EdgeProfile
    chosen_by: str = ""  # "--device" or "detected board"
    candidates: tuple[EdgeCandidate, ...] = ()
