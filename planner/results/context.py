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
class PlanResources:
    """The memory and cores a plan ran under, and the most memory its process tree took.

    The limits are read when the plan starts; the peaks when it finishes (None until then, and in files
    written before they were recorded).
    """

    memory_limit_bytes: int | None = None  # the tightest cgroup memory limit, else the RAM
    limit_source: str = ""  # 'cgroup v1', 'cgroup v2' or 'RAM'
    available_bytes: int | None = None  # free of it when the plan started
    cores: int | None = None  # the cores the planner may use (affinity, CPU quota)
    peak_bytes: int | None = None  # the own (anonymous) memory of the planner's process tree at its largest
    peak_file_bytes: int | None = None  # the mapped files (libraries) beside it then, as the largest process maps
    peak_processes: int | None = None  # how many processes the tree had at that peak
    peak_basis: str = ""  # how the peak was counted and sampled
    cgroup_peak_bytes: int | None = None  # the plan's own cgroup's peak, page cache included; None: not its own
    oom_kills: int | None = None  # processes the out-of-memory killer ended in that cgroup during the plan


@dataclass(frozen=True)
class Environment:
    """The versions and settings that affect the numbers, recorded when the plan started."""

    planner: str = ""
    python: str = ""
    platform: str = ""
    packages: dict[str, str | None] = field(default_factory=dict)  # None: not installed
    env: dict[str, str] = field(default_factory=dict)  # the thread and device variables that were set
    date: str = ""  # when the plan started, ISO 8601 with the local offset
    resources: PlanResources | None = None  # the memory and cores it planned under, and its peak memory


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
