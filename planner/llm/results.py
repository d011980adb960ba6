"""What an LLM plan records (results.json with `"kind": "decoder-llm"`), typed, and read back through the codec.

Plain values only (no numpy, no torch, not even indirectly), so a client that only shows a plan (the TUI) reads
it typed; planner.llm.fidelity computes the fidelity values kept here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from planner.codec import from_data, to_data
from planner.hardware.ceiling_values import ReadRoof
from planner.models.llm import LlmFacts

LLM_KIND = "decoder-llm"
"""results.json's `kind` for an LLM plan (the other plans' records have none)."""
LLM_SCHEMA = 1


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class GreedyAgreement:
    """How a candidate's greedy continuations compare with the original's on the same prompts."""

    prompts: int
    tokens_each: int
    identical: int  # prompts whose continuation is the same token for token
    first_divergence: tuple[int | None, ...]  # per prompt, the first differing position (None: none differs)
    share_differing: float  # differing tokens over all compared tokens


@dataclass(frozen=True)
class LlmFidelity:
    """A candidate against the original on the same text: perplexity, its change, KL, greedy agreement, verdict."""

    perplexity: float
    tokens_scored: int
    windows: int
    perplexity_change: Interval | None  # candidate / original - 1; None for the original itself
    kl: Interval | None  # mean KL(original || candidate), nats per token
    greedy: GreedyAgreement | None
    verdict: str  # "reference", "met", "missed" or "not established"
    reason: str


@dataclass(frozen=True)
class KvPoint:
    """The KV cache at one context: predicted from the config, and measured from the runtime's cache."""

    tokens: int
    predicted_bytes: int
    measured_bytes: int | None  # None: the runtime does not expose its cache


@dataclass(frozen=True)
class Timings:
    """A candidate's measured speed: TTFT per prompt length, TPOT, tokens/s, load time, memory."""

    ttft_p50_ms: dict[int, float]  # prompt length -> median TTFT
    ttft_p90_ms: dict[int, float]
    tpot_p50_ms: float
    tpot_p90_ms: float
    decode_tokens_per_s: float  # 1000 / TPOT p50
    prefill_tokens_per_s: float  # the longest prompt's length / its TTFT p50
    load_s: float
    peak_rss_bytes: int
    generations: int  # timed generations
    tpot_samples: int
    new_tokens: int


@dataclass(frozen=True)
class LlmCandidate:
    """One candidate: what it is, how it measured, how faithful it is; or why it was not measured."""

    label: str
    plugin: str
    title: str
    status: str  # "measured", "failed", "skipped", "not reached"
    reason: str = ""
    runtime: str = ""
    weights: str = "fp32"
    kv: str = "fp32"
    threads: int | None = None
    apply: str = ""
    is_baseline: bool = False
    timings: Timings | None = None
    fidelity: LlmFidelity | None = None
    kv_points: tuple[KvPoint, ...] = ()
    bytes_per_token: int = 0  # what decoding one token reads (weights at its precision + KV at the decode context)
    roof_share: float | None = None  # decode tokens/s x bytes per token / read roof
    model_bytes: int = 0  # its files on disk
    spec: dict = field(default_factory=dict)  # the LlmSpec as data (planner.codec)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoardProjection:
    """Decode tokens/s projected onto a named board from its memory bandwidth: an estimate, with its basis."""

    board: str
    bandwidth_bytes_per_s: float
    basis: str
    tokens_per_s: dict[str, float]  # candidate label -> projected decode tokens/s
    fits: dict[str, bool]  # candidate label -> whether weights + KV fit the board's memory


@dataclass(frozen=True)
class LlmPlan:
    """One LLM plan: the model's facts, the machine's read roof, the settings, every candidate and the decision."""

    facts: LlmFacts
    cpu: str
    threads: int
    roof: ReadRoof | None
    cache_resident: bool  # the weights fit in the last-level cache: compared with no DRAM roof
    prompt_lengths: tuple[int, ...]
    new_tokens: int
    context: int  # the context the memory is planned for
    text: str  # what fidelity was scored on
    ppl_limit: float
    kl_limit: float
    started: str
    finished: str = ""
    status: str = "running"  # running, ok, interrupted, failed
    quick: bool = False
    budget_s: float | None = None
    candidates: tuple[LlmCandidate, ...] = ()
    winner: str = ""  # the chosen candidate's label ('' when none met the fidelity limits)
    decision: str = ""  # why, in a sentence
    board: BoardProjection | None = None
    package: str = ""  # the hand-over package's folder, relative to the plan's
    package_problem: str = ""
    warnings: tuple[str, ...] = ()
    kind: str = LLM_KIND
    schema: int = LLM_SCHEMA

    def candidate(self, label: str) -> LlmCandidate | None:
        """The candidate with `label`, if any."""
        return next((c for c in self.candidates if c.label == label), None)

    @property
    def baseline(self) -> LlmCandidate | None:
        """The original model's measured run, if it was measured."""
        return next((c for c in self.candidates if c.is_baseline and c.status == "measured"), None)


def write_llm_plan(plan: LlmPlan, folder: Path) -> Path:
    """Write results.json into `folder` (atomically: a reader never sees half of it)."""
    path = Path(folder) / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(to_data(plan), indent=2, sort_keys=True))
    tmp.replace(path)
    return path


def read_llm_plan(path: Path) -> LlmPlan:
    """Read an LLM plan's results.json (or the folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    return from_data(json.loads(path.read_text()), LlmPlan)


def is_llm_results(data: dict) -> bool:
    """Whether results.json data is an LLM plan's."""
    return isinstance(data, dict) and data.get("kind") == LLM_KIND
