"""Typed results on the bus: the baseline, each candidate's result and the plan's results.

Frozen dataclasses, serialised by one mechanism (`planner.codec`). The machine (`HardwareProfile`,
`Ceilings`), the environment, the loaded model and an edge board's projection are typed records
(planner/results/context.py); what the plan decided (the requirements and their checks, the checklist,
the decision path and the plan) is typed too (planner/results/decisions.py, planner.advice's data).
Parts that other stages still describe as JSON objects (a candidate's config and spec, the per-layer
analysis) travel as plain JSON objects inside these values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from planner.hardware.ceiling_values import Ceilings
from planner.hardware.profile import HardwareProfile
from planner.results.analysis import BottleneckClassesRecord, Finding, LayerRecord, VerdictRecord
from planner.results.audit import MeasurementAudit
from planner.results.context import EdgeProjection, Environment, ModelDescription
from planner.results.decisions import AnswerRecord, DecisionPathRecord, PlanRecord, RequirementCheck, Requirements
from planner.results.energy_values import EnergySource, InferenceEnergy
from planner.results.interaction import Interaction
from planner.results.pipeline_split import PipelineSplit
from planner.results.roof_share import RoofShare, candidate_roof_share

SCHEMA_VERSION = 3
"""results.json's format; 2 moved ranks off the candidates into `ranking`; 3 lists each plan step's
plugins. 1 and 2 are still read."""

JSON = dict[str, Any]


@dataclass(frozen=True)
class LatencyStats:
    """Summary statistics of one set of latency samples, in milliseconds."""

    samples: int
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    p50_ms: float
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    iqr_ms: float
    iqr_over_median: float
    unstable: bool
    ci95_rel: float


@dataclass(frozen=True)
class ThroughputPoint:
    """One batch size's median latency and the throughput that implies."""

    batch: int
    latency_p50_ms: float
    samples_per_s: float
    peak_memory_bytes: int | None


@dataclass(frozen=True)
class StreamPoint:
    """Rows per second at one batch with `streams` inference requests in flight at once.

    `streams` 1 is the candidate as configured, one request at a time; more is the runtime's own
    way of serving concurrent requests (OpenVINO's THROUGHPUT streams, parallel ONNX Runtime
    sessions), which `basis` names.
    """

    batch: int
    streams: int
    samples_per_s: float  # streams x batch over the median call time: the batch sweep's rule, so they compare
    basis: str = ""
    sustained_per_s: float | None = None  # rows completed over the wall time of the timed windows


@dataclass(frozen=True)
class SequencePoint:
    """One sequence length's median latency (at the model's batch) and the tokens per second it implies."""

    length: int
    latency_p50_ms: float
    tokens_per_s: float


@dataclass(frozen=True)
class Fidelity:
    """Agreement between a candidate and the reference over the same inputs."""

    cosine: float
    max_abs_error: float
    mean_abs_error: float
    top1_agreement: float | None  # only for outputs shaped (batch, classes)
    samples: int
    accuracy: float | None = None  # with --val-data labels
    reference_accuracy: float | None = None
    accuracy_low: float | None = None  # the 95% Wilson interval of accuracy over `samples`
    accuracy_high: float | None = None
    # The 95% interval of reference_accuracy - accuracy on the same labelled samples (a paired difference), and
    # about how many labelled samples would settle the accuracy budget where the interval straddles it.
    accuracy_drop_low: float | None = None
    accuracy_drop_high: float | None = None
    settle_samples: int | None = None
    exact: bool = False  # the same arithmetic, reproducing the original to rounding: what holds here holds anywhere
    reference: bool = False  # the baseline compared with itself
    # top1_agreement counts only samples whose reference margin (top logit minus runner-up) exceeds
    # the candidate's noise; these say over how many samples, and the agreement over all of them.
    top1_samples: int | None = None
    top1_agreement_all: float | None = None
    # The 95% Wilson interval of top1_agreement over its top1_samples.
    top1_low: float | None = None
    top1_high: float | None = None
    decided_by: str = ""  # which test passed or rejected the candidate (accuracy, top-1, map agreement...)
    # What the output is decides the test (see planner.measure.fidelity): classes, dense (a map per
    # pixel), sequence (class scores per position) or regression; '' in files written before kinds.
    output_kind: str = ""
    kind_basis: str = ""  # how the kind was known: read from the output's shape, or given with --output-kind
    top5_agreement: float | None = None  # classes (more than 5): the reference's top-1 within the candidate's top 5
    map_iou: float | None = None  # dense, one channel: IoU of the thresholded maps' foreground
    map_threshold: float | None = None  # the threshold that map was cut at (0.5 for a probability map, else 0)
    pixel_agreement: float | None = None  # dense, several channels: share of pixels whose class (argmax) agrees
    position_agreement: float | None = None  # sequence: share of positions whose class (argmax) agrees
    # Pixels or positions counted (those whose reference margin exceeds the candidate's error), of how many.
    agreement_counted: int | None = None
    agreement_total: int | None = None
    # sequence and ctc: whole sequences. The sequence read from the output (each position's class; for ctc, decoded:
    # repeats collapsed, blanks dropped) is unchanged in this share of `sequences` samples (95% Wilson interval
    # low..high), and edit_rate is the edits (Levenshtein) it takes to turn the original's sequences into the
    # candidate's over the original's length: for ctc, the character error rate.
    sequences: int | None = None
    sequences_unchanged: float | None = None
    sequences_low: float | None = None
    sequences_high: float | None = None
    edit_rate: float | None = None
    ctc_blank: int | None = None  # ctc: the blank class dropped when decoding
    # embedding: each sample's vector against the original's (cosine: mean and lowest), and whether its nearest
    # neighbour among the other samples stays the same one (share, with its 95% Wilson interval over `samples`),
    # and the share of its five nearest that stay among the five.
    sample_cosine: float | None = None
    sample_cosine_min: float | None = None
    neighbour_kept: float | None = None
    neighbour_low: float | None = None
    neighbour_high: float | None = None
    top5_kept: float | None = None
    relative_error: float | None = None  # ||a - b|| / ||a|| over all outputs
    spread_error: float | None = None  # mean |a - b| over the output's scale (see spread_basis)
    spread_basis: str = ""  # "probability" (a map within [0, 1]: the scale is 1) or "spread" (the reference's std)
    # The part of the output that depends on the input: each output minus the original's mean output over
    # the samples. input_spread is its size over the outputs' size (||ref - mean|| / ||ref||); the candidate
    # is compared on it by cosine and by its error over that part's size (||out - ref|| / ||ref - mean||).
    input_spread: float | None = None
    centered_cosine: float | None = None
    centered_error: float | None = None
    # Why the check cannot judge this candidate ('' when it can): the outputs barely depend on the inputs
    # used (random weights?), or a map has no foreground on them. Such a candidate is not established.
    cannot_judge: str = ""


class OutputKind(StrEnum):
    """What a model's output is, which decides how a candidate's copy of it is judged."""

    CLASSES = "classes"  # (batch, classes) scores
    DENSE = "dense"  # (batch, C, H, W) a map per pixel
    SEQUENCE = "sequence"  # (batch, positions, classes) scores per position
    CTC = "ctc"  # (batch, positions, classes) scores decoded as CTC (argmax, repeats collapsed, blanks dropped): text
    EMBEDDING = "embedding"  # (batch, dims) vectors compared by direction and by which samples lie nearest
    REGRESSION = "regression"  # anything else: values compared as numbers


class Status(StrEnum):
    """The outcome of one step or candidate."""

    OK = "ok"
    REJECTED = "rejected"  # measured, but failed the fidelity gate
    # Measured; changes the arithmetic (bf16, INT8, pruning...) and drifted from the original on generated
    # inputs only, which cannot tell whether that matters on real data: not ranked, never called rejected.
    UNCONFIRMED = "unconfirmed"
    FAILED = "failed"
    SKIPPED = "skipped"
    PARTIAL = "partial"


class RunStatus(StrEnum):
    """The outcome of a whole plan."""

    RUNNING = "running"
    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Prediction:
    """What was expected of a candidate before it was measured: a speedup band over the baseline, and why."""

    low: float | None = None
    high: float | None = None
    basis: str = ""
    family: str = ""  # the rule's candidate family: int8, bf16, runtime, compile...

    def band(self) -> str:
        """The band as people read it: '1.5x-4x'; '' when there is none."""
        if self.low is None or self.high is None:
            return ""
        return f"{self.low:g}x-{self.high:g}x"

    def verdict(self, measured: float | None) -> str:
        """Where a measured speedup fell: 'inside', 'above' or 'below' the band; '' when either is missing."""
        if self.low is None or self.high is None or measured is None:
            return ""
        if measured < self.low:
            return "below"
        return "above" if measured > self.high else "inside"


@dataclass(frozen=True)
class Confirmation:
    """A quick screen's leader measured again with the full method before it is ranked.

    The quick screen times each candidate for about 2 seconds; on a busy machine or for a noisy
    runtime that can misorder the leaders. The candidate's latency is the full measurement; the
    screen's figure stays here so a user sees whether the two agreed.
    """

    screen_p50_ms: float
    rel_change: float  # (full - screen) / screen
    reproduced: bool  # within REPRODUCE_TOLERANCE of the screen
    note: str = ""
    interleaved: int = 0  # how many leaders were timed in turns, this one included (0: alone, as older files were)
    # The baseline's median timed in the same turns, which the speedup is worked out from: a ratio measured side by
    # side, under one load (None: the baseline was not in the turns, and the speedup is over its profile's figure).
    baseline_p50_ms: float | None = None
    revisited: bool = False  # its screen dropped it as clearly slower, within reach of the best: timed again here


REPRODUCE_TOLERANCE = 0.10


@dataclass(frozen=True)
class Declared:
    """What a candidate's plugin declared about it, recorded when it was measured, so that the report,
    the ranking and the interaction step read it from the results (no plugin need be installed)."""

    phase: int = 1  # the roadmap phase: 1 quick wins, 2 extra impact, 3 architecture; 0 none (the baseline's own)
    arithmetic: str = "none"  # none, reduced-precision, approximate or structural (planner.plugins.Arithmetic)
    runtime: str = ""  # the runtime it runs on; with the precision, the family near-duplicates fold into
    transforms_model: bool = False  # it changes the model itself (an architecture transform)
    is_baseline: bool = False  # its plugin runs the model as it comes
    # The candidate in a reader's words and the lines that apply it in its runtime's own API (Plugin.describe);
    # '' in files written before plugins described their candidates (planner.results.names falls back).
    title: str = ""
    apply: str = ""


@dataclass(frozen=True)
class CandidateResult:
    """One measured (or failed) candidate, as results.json and the report carry it."""

    plugin: str
    label: str
    config: JSON
    precision: str
    status: Status
    reason: str = ""
    latency_ms: LatencyStats | None = None
    throughput: tuple[ThroughputPoint, ...] = ()
    knee_batch: int | None = None
    streams: tuple[StreamPoint, ...] = ()  # rows/s at the best batch, one stream and several
    sequence_sweep: tuple[SequencePoint, ...] = ()
    peak_memory_bytes: int | None = None
    memory_basis: str = ""
    size_bytes: int | None = None
    fidelity: Fidelity | None = None
    speedup: float | None = None
    # Its share of its own precision's measured roof (the INT8 roof for an INT8 candidate); None where there is
    # no such roof, where it removes work (pruning, low rank), or in files written before it was recorded.
    roof_share: RoofShare | None = None
    prediction: Prediction | None = None
    confirmation: Confirmation | None = None
    reproduce: str = ""
    info: JSON = field(default_factory=dict)
    threads: JSON = field(default_factory=dict)
    stopped_by: str = ""
    wall_s: float | None = None
    spec: JSON = field(default_factory=dict)
    audit: MeasurementAudit | None = None  # what the machine was doing while this was timed
    declared: Declared | None = None  # its plugin's declarations (None in files written before they existed)
    # Why the budgeted search gave it no more time than the screen (clearly slower than the best at the
    # time: its median's 95% interval lay above the best's); '' when it was not dropped.
    dropped: str = ""
    energy: InferenceEnergy | None = None  # joules per inference; None in files written before energy was measured
    pipeline: PipelineSplit | None = None  # requests end to end with the user's --pipeline (None: not timed)
    # The own (anonymous) memory of the planner's whole process tree (planner, this worker, its compiler processes)
    # at its largest while this was measured (planner.measure.tree_memory); None in files written before it was.
    tree_peak_bytes: int | None = None

    @property
    def p50(self) -> float | None:
        """Median latency in ms, if measured."""
        return self.latency_ms.p50_ms if self.latency_ms is not None else None

    def peak_rate(self) -> StreamPoint | None:
        """The most rows/s measured, over the batch sweep (one stream) and parallel streams; None if none."""
        points = [StreamPoint(p.batch, 1, p.samples_per_s, "batch sweep, one request at a time")
                  for p in self.throughput if p.samples_per_s]
        points += [p for p in self.streams if p.samples_per_s]
        # Ties go to fewer streams, then the smaller batch: the same rate for less memory and latency.
        return max(points, key=lambda p: (p.samples_per_s, -p.streams, -p.batch)) if points else None

    @property
    def is_reference(self) -> bool:
        """Whether this is the baseline itself (the outputs every candidate is compared with)."""
        return self.fidelity is not None and self.fidelity.reference

    @property
    def measured(self) -> bool:
        """Whether it ran and was timed (ok, rejected by the fidelity gate, or not established on real data)."""
        return self.status in (Status.OK, Status.REJECTED, Status.UNCONFIRMED) and self.latency_ms is not None


@dataclass(frozen=True)
class ModelSummary:
    """The model as the baseline measured it."""

    name: str
    source: str
    kind: str
    parameters: int | None
    size_bytes: int | None


@dataclass(frozen=True)
class Baseline:
    """The model as it runs out of the box: measured timing and memory, and the layer analysis."""

    model: ModelSummary
    input_shape: tuple[int, ...]  # the first input's shape (every input is in `inputs`)
    latency_ms: LatencyStats
    runtime: str = ""
    inputs: tuple[JSON, ...] = ()  # each input: name, shape, dtype, axes, values (how they were drawn)
    # Defaults for what earlier planners did not record beside the baseline.
    output_shape: tuple[int, ...] = ()
    device: str = ""
    stopped_by: str = ""
    throughput: tuple[ThroughputPoint, ...] = ()
    knee_batch: int | None = None
    sequence_sweep: tuple[SequencePoint, ...] = ()
    peak_memory_bytes: int | None = None
    memory_basis: str = ""
    threads: JSON = field(default_factory=dict)
    info: JSON = field(default_factory=dict)
    spec: JSON = field(default_factory=dict)
    reproduce: str = ""
    ceilings: JSON = field(default_factory=dict)
    wall_s: float | None = None
    quick: bool = False
    flops_per_sample: int | None = None
    flops_basis: str = ""
    layers: tuple[LayerRecord, ...] = ()
    layer_time_method: str = ""
    peak_activation_bytes: int | None = None
    findings: tuple[Finding, ...] = ()
    bottleneck: VerdictRecord | None = None
    layer_verdicts: dict[str, VerdictRecord] = field(default_factory=dict)
    bottleneck_classes: BottleneckClassesRecord | None = None
    analysis_notes: tuple[str, ...] = ()
    audit: MeasurementAudit | None = None  # what the machine was doing while the baseline was timed
    pipeline: PipelineSplit | None = None  # requests end to end with the user's --pipeline (None: not given)
    energy_source: EnergySource | None = None  # the counter and idle power (None in files written before them)
    energy: InferenceEnergy | None = None  # the baseline's own joules per inference
    # Why its timing cannot be trusted ('' when it can): its median disagreed with its own batch sweep at the
    # same batch, twice. No speedup is worked out against such a baseline.
    invalid: str = ""
    # Its plugin's description of the out-of-the-box run (title, apply; phase 0: in no roadmap phase); None in
    # files written before plugins described their candidates.
    declared: Declared | None = None

    def speedup_of(self, p50_ms: float | None) -> float | None:
        """Its p50 over a candidate's; None without a candidate figure, or when its own timing is invalid."""
        return self.latency_ms.p50_ms / p50_ms if p50_ms and not self.invalid else None

    def as_candidate(self) -> CandidateResult:
        """The baseline as the first row of the candidate table: the reference, speedup 1."""
        return CandidateResult(
            plugin=str(self.spec.get("plugin", "")), label=self.runtime, config=dict(self.spec.get("config", {})),
            precision=str(self.spec.get("precision", "fp32")), status=Status.OK, latency_ms=self.latency_ms,
            throughput=self.throughput, knee_batch=self.knee_batch, sequence_sweep=self.sequence_sweep,
            peak_memory_bytes=self.peak_memory_bytes,
            memory_basis=self.memory_basis, size_bytes=self.model.size_bytes,
            fidelity=Fidelity(cosine=1.0, max_abs_error=0.0, mean_abs_error=0.0, top1_agreement=1.0,
                              samples=0, reference=True),
            speedup=1.0, roof_share=candidate_roof_share(self, str(self.spec.get("precision", "fp32")),
                                                         self.latency_ms.p50_ms),
            reproduce=self.reproduce, info=self.info, threads=self.threads, spec=self.spec,
            stopped_by=self.stopped_by, audit=self.audit, pipeline=self.pipeline, energy=self.energy,
            declared=self.declared)


@dataclass(frozen=True)
class Ranking:
    """Candidates that passed the fidelity gate, best first, as indices into `candidates`."""

    order: tuple[int, ...] = ()
    by: str = "p50 latency"

    @property
    def best(self) -> int | None:
        """The index of the best candidate, or None when nothing was ranked."""
        return self.order[0] if self.order else None

    def rank_of(self, index: int) -> int | None:
        """A candidate's 1-based rank, or None when it was not ranked."""
        return self.order.index(index) + 1 if index in self.order else None


@dataclass(frozen=True)
class SkippedPlugin:
    """A plugin that could not run here, with every reason."""

    plugin: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Validation:
    """The validation folder the candidates were measured on (--val-data, or a demo's built-in held-out set)."""

    folder: str
    labels: bool
    samples: int
    baseline_accuracy: float | None = None
    basis: str = "--val-data"  # what the data is: the user's --val-data, or a demo's built-in held-out set
    description: str = ""  # what the samples are and how they became inputs (images: size, preset, labels)
    skipped: str = ""  # the files that could not be read, and why ('' when none)


@dataclass(frozen=True)
class BudgetRecord:
    """What the plan's time budget (`--budget`) allowed, what the plan spent, and what the budget cut."""

    budget_s: float | None = None  # None: no budget was given
    spent_s: float = 0.0  # the whole plan's wall time, from loading the model to writing the results
    cut: tuple[str, ...] = ()  # each thing the budget left out, in a sentence that says why
    basis: str = ""  # where the cap came from when the user did not give it ('' for --budget)
    # A plan run step by step (the TUI): the seconds each of this model's measuring steps took ("profile",
    # "optimize", "packages"); `spent_s` is then their sum, not the wall time, which holds the user's pauses.
    steps: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Deployment:
    """One hand-over package under the out folder's deploy/: a candidate's artifact, runner and manifest."""

    role: str  # why it was packaged: "winner", or "phase 1", "phase 2", "phase 3" (that phase's best)
    label: str  # the packaged candidate's label
    candidate: int | None = None  # its index in PlanResults.candidates
    folder: str = ""  # the package's folder relative to the out folder (deploy/...); '' when none was written
    runtime: str = ""  # the one runtime its run.py uses
    reason: str = ""  # why nothing was written, or why it stands in for a better candidate that could not be
    # The package's own p50 where it was timed when written (its program is not the one the plan timed, or the plan's
    # figure was a quick screen's), with why; None where the manifest records the plan's own figure.
    package_p50_ms: float | None = None
    package_basis: str = ""


@dataclass(frozen=True)
class PlanResults:
    """Everything a plan measured and decided: the object behind results.json.

    A record not made yet (no model loaded, no requirements set, no plan, no edge board) is None here and
    `{}` in results.json, as that file has always written it (see planner.results.read).
    """

    schema_version: int = SCHEMA_VERSION
    status: RunStatus = RunStatus.RUNNING
    planner_version: str = ""
    environment: Environment | None = None
    model: ModelDescription | None = None
    hardware: HardwareProfile | None = None
    target: str | None = None
    requirements: Requirements | None = None
    ceilings: Ceilings | None = None
    quick: bool = False
    baseline: Baseline | None = None
    checklist: tuple[AnswerRecord, ...] = ()
    decision_path: DecisionPathRecord | None = None
    plan: PlanRecord | None = None
    candidates: tuple[CandidateResult, ...] = ()
    ranking: Ranking | None = None
    requirement_checks: tuple[RequirementCheck, ...] = ()  # against the best candidate (the subject)
    requirement_checks_subject: str = ""
    requirement_checks_baseline: tuple[RequirementCheck, ...] = ()
    validation: Validation | None = None
    warnings: tuple[str, ...] = ()
    skipped_plugins: tuple[SkippedPlugin, ...] = ()
    predictions_held: str = ""  # how the predicted speedup bands compared with the measured speedups
    edge_device: EdgeProjection | None = None  # an edge board's profile and each candidate projected onto it
    interactions: tuple[Interaction, ...] = ()  # architecture x hardware: four cells and their interaction factor
    budget: BudgetRecord | None = None  # the time budget and what it cut (None in files written before it)
    deployments: tuple[Deployment, ...] = ()  # the hand-over packages written under deploy/
    finished: str = ""
    # What the last optimize run was cancelled before: each candidate's label (a plugin's name with "(not built)"
    # where it was stopped before building its candidates); see planner.results.counts.
    not_reached: tuple[str, ...] = ()

    @property
    def energy_source(self) -> EnergySource | None:
        """The energy counter the candidates' figures come from (measured with the baseline), or None."""
        return self.baseline.energy_source if self.baseline is not None else None

    @property
    def best(self) -> CandidateResult | None:
        """The best-ranked candidate, or None when nothing was ranked."""
        index = self.ranking.best if self.ranking else None
        return self.candidates[index] if index is not None else None

    def rank_of(self, index: int) -> int | None:
        """The 1-based rank of the candidate at `index`, or None."""
        return self.ranking.rank_of(index) if self.ranking else None

