"""What a plan decided, as results hold it: the requirements and their checks, the checklist's answers, the
decision tree's path and the plan.

planner.advice computes these and imports planner.results, so results cannot import advice's types; the
data classes live here instead, below both, and planner.advice re-exports them (its callers do not change).
Only data lives here: the logic that makes them (loading requirements, answering the checklist, walking
the trees, making the plan) stays in planner.advice.

Three advice objects are written to results.json in a shape of their own (an answer flattens its
question, a recommended action its action with the title filled in, and the plan names its parts
`checklist` and `decision_path`); results hold those as records shaped exactly like that JSON
(`AnswerRecord`, `ActionRecord`, `DecisionPathRecord`, `PlanRecord`), so the file's keys and values do
not change and its readers (the report, scripts) see no difference. The advice objects make their records
(`Answer.record()` and the like).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Mapping

from planner import units
from planner.errors import RequirementsError

# ---- requirements ---------------------------------------------------------------------------------


class Percentile(StrEnum):
    """The latency percentile a latency target applies to."""

    P50 = "p50"
    P95 = "p95"
    P99 = "p99"


class DeviceTier(StrEnum):
    """A row of the device performance targets (a device tier)."""

    SERVER = "Server"
    DESKTOP = "Desktop"
    MOBILE = "Mobile"
    EDGE = "Edge"


# The device performance targets have no accuracy column; 1% is the fidelity gate's own default max_accuracy_drop.
DEFAULT_ACCURACY_DROP = 0.01

SOURCE_FLAG = "flag"
SOURCE_FILE = "file"


@dataclass(frozen=True)
class Requirements:
    """What the deployment must achieve; `sources` says, per field, where each value came from."""

    latency_ms: float | None = None
    latency_percentile: Percentile = Percentile.P95
    min_throughput: float | None = None
    memory_budget_bytes: int | None = None
    model_size_budget_bytes: int | None = None
    accuracy_budget: float | None = DEFAULT_ACCURACY_DROP
    quantization: tuple[str, ...] = ()
    tier: DeviceTier | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def stated(self) -> bool:
        """Whether the user stated any requirement (a flag or a file), not only the planner's defaults."""
        return any(origin in (SOURCE_FLAG, SOURCE_FILE) for origin in self.sources.values())

    @property
    def speed_stated(self) -> bool:
        """Whether the user stated a latency or throughput target: only such a target, once met, is fast enough.
        An accuracy, memory or size budget alone bounds the candidates; it says nothing of how fast is enough."""
        return any(getattr(self, key) is not None and self.source(key) in (SOURCE_FLAG, SOURCE_FILE)
                   for key in ("latency_ms", "min_throughput"))

    def __post_init__(self) -> None:
        for name, positive in (("latency_ms", True), ("min_throughput", True),
                               ("memory_budget_bytes", True), ("model_size_budget_bytes", True)):
            value = getattr(self, name)
            if value is not None and (units.finite(value) is None or (positive and value <= 0)):
                raise RequirementsError(f"requirement {name} = {value!r} is not valid",
                                        f"{name} must be a number > 0, or None for no target")
        if self.accuracy_budget is not None:
            drop = units.finite(self.accuracy_budget)
            if drop is None or not 0 <= drop < 1:
                raise RequirementsError(f"requirement accuracy_budget = {self.accuracy_budget!r} is not valid",
                                        "it is a fraction from 0 up to (not including) 1, e.g. 0.01 for a 1% drop")
        try:
            object.__setattr__(self, "latency_percentile", Percentile(self.latency_percentile))
        except ValueError:
            raise RequirementsError(f"latency percentile {self.latency_percentile!r} is not valid",
                                    "use p50, p95 or p99") from None
        object.__setattr__(self, "quantization", tuple(self.quantization))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    def source(self, name: str) -> str:
        """Where the named field's value came from ('flag', 'file', or a default's label)."""
        return self.sources.get(name, "not set")

    @property
    def latency_text(self) -> str | None:
        """The latency target as people write it, e.g. '< 50 ms p95'."""
        if self.latency_ms is None:
            return None
        return f"< {units.ms(self.latency_ms)} {self.latency_percentile}"


class CheckStatus(StrEnum):
    """The outcome of one requirement check."""

    MET = "met"
    # Met on the median: the target's own percentile was not measured (too few samples for it) and only
    # the planner chose that percentile, so the median stands in for it. Never reported as plainly met.
    MET_AT_P50 = "met-at-p50"
    MISSED = "missed"
    IMPOSSIBLE = "impossible"
    NOT_MEASURED = "not-measured"
    # Something was measured, but not what the requirement names (a p95 from too few samples for one):
    # no verdict either way.
    NOT_JUDGED = "not-judged"
    # Measured, but the samples cannot support a verdict: the measurement's 95% interval straddles the target
    # (an accuracy drop on too few labelled samples). Never met, never missed.
    NOT_ESTABLISHED = "not-established"


@dataclass(frozen=True)
class RequirementCheck:
    """One requirement against one measurement: met is None when it could not be judged.

    `met` is True for MET and MET_AT_P50 alike (the plan treats both as met); readers that word a
    verdict read `status`, so a target met only on the median is never called met at its percentile.
    """

    name: str
    target: str
    measured: str | None
    met: bool | None
    status: CheckStatus
    margin: str
    source: str


# ---- the checklist --------------------------------------------------------------------------------


class Group(StrEnum):
    """Which of the profiling checklists (GPU, CPU, edge) a question belongs to."""

    GPU = "gpu"
    CPU = "cpu"
    EDGE = "edge"


class AnswerStatus(StrEnum):
    """How a question was answered."""

    AUTO = "auto"  # answered from this run's measurements
    ASK_USER = "ask-user"  # only the user's serving setup can tell
    NOT_MEASURED = "not-measured"  # measurable, but this profile did not measure it
    USER = "user"  # the user has replied


@dataclass(frozen=True)
class AnswerRecord:
    """A checklist answer as results.json holds it: the question's fields flattened beside the answer
    (planner.advice's `Answer` holds its `Question` instead)."""

    id: str
    group: Group
    question: str  # the checklist's wording
    hint: str = ""
    answered_by: str = ""
    answer: str = ""
    evidence: str = ""
    status: AnswerStatus = AnswerStatus.NOT_MEASURED
    prompt: str | None = None
    value: Any = None  # JSON-safe facts the decision trees read (bools, numbers, small dicts)


# ---- the decision trees ---------------------------------------------------------------------------


class NodeKind(StrEnum):
    """What walking a node does."""

    STEP = "step"
    DECISION = "decision"
    ACTION = "action"
    NOTE = "note"


class StepKind(StrEnum):
    """Whether a recommended action is measured through a plugin or is advice for people."""

    MEASURE = "measure"
    ADVICE = "advice"


@dataclass(frozen=True)
class Action:
    """A leaf recommendation and what the method expects of it.

    The plugins that measure it are those declaring its id (planner.plugins.ActionId); an action no
    plugin declares is advice for people.
    """

    id: str
    title: str
    expected: str
    fidelity_gated: bool = False
    phase: int = 1  # 1 runtime/config, 2 precision or heavier runtimes, 3 needs retraining


@dataclass(frozen=True)
class VisitedNode:
    """A node the walk passed through, what it decided and the evidence for it."""

    id: str
    text: str
    kind: NodeKind
    result: str
    evidence: str


@dataclass(frozen=True)
class ActionRecord:
    """A recommended action as results.json holds it: the action's id, its title with the options filled
    in, and the node and evidence that led to it (planner.advice's `RecommendedAction` holds the `Action`)."""

    action: str  # the Action's id
    title: str = ""
    plugins: tuple[str, ...] = ()  # the plugins that measure it on this target (none: advice)
    node: str = ""  # the tree node's id
    node_text: str = ""
    evidence: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    fidelity_gated: bool = False
    when: str = ""


@dataclass(frozen=True)
class DecisionPathRecord:
    """A walk of one target's decision tree as results.json holds it: nodes visited, actions recommended."""

    target: str = ""
    visited: tuple[VisitedNode, ...] = ()
    actions: tuple[ActionRecord, ...] = ()


# ---- the plan -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanStep:
    """One step: the plugins that measure it (none: advice), why (node and evidence), what the method expects."""

    order: int
    plugins: tuple[str, ...]
    title: str
    why: str
    expected: str
    fidelity_gated: bool
    kind: StepKind
    phase: int
    optional: bool = False
    when: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # the tree node or profile finding the step came from


PLAN_SCHEMA = 1
"""The plan object's own format version, written as its `schema`."""


@dataclass(frozen=True)
class PlanRecord:
    """A plan as results.json holds it (planner.advice's `Plan.record()`): its `schema`, and its answers
    and tree walk named `checklist` and `decision_path`.

    The last three are None or empty in files written before the plan carried them.
    """

    schema: int = PLAN_SCHEMA
    target: str = ""
    requirements_met: bool | None = None
    summary: str = ""
    steps: tuple[PlanStep, ...] = ()
    notes: tuple[str, ...] = ()
    checks: tuple[RequirementCheck, ...] = ()
    requirements: Requirements | None = None
    checklist: tuple[AnswerRecord, ...] = ()
    decision_path: DecisionPathRecord | None = None
