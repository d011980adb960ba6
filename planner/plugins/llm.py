"""The decoder-LLM plugin contract: a runtime that generates token by token, and scores text.

An LLM candidate is measured differently from a single-call model (time to the first token, then time per
token), so its plugins implement `LlmPlugin`, found through the `planner.llm_targets` entry points. Like the
other plugins they build candidates as plain data (`LlmSpec`) and open them in the measuring worker
(`LlmSession`); heavy imports happen inside `candidates` and `open` only.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, runtime_checkable

from planner.plugins.contract import Description, missing_package_reason

if TYPE_CHECKING:
    import numpy as np

    from planner.models.llm import LlmFacts

LLM_GROUP = "planner.llm_targets"
"""The entry-point group LLM plugins register in."""


@dataclass(frozen=True)
class LlmSpec:
    """One LLM candidate as plain data: which plugin opens it, its weights' and KV cache's precision, its files.

    `weights` is the precision the weights are stored in (fp32, bf16, int8, int4); `kv` the KV cache's (fp32,
    bf16, u8...); `threads` the threads it decodes with. `artifacts` maps a role ("model") to a path; `config`
    holds the plugin's own settings (JSON-ready).
    """

    plugin: str
    label: str
    weights: str = "fp32"
    kv: str = "fp32"
    threads: int | None = None
    config: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LlmSkip:
    """A candidate a plugin cannot build for this model, with why (a group size larger than a layer)."""

    label: str
    reason: str


@dataclass(frozen=True)
class Generation:
    """What one generate call gave: the new tokens and when each arrived (seconds from the call's start)."""

    tokens: tuple[int, ...]
    times_s: tuple[float, ...]


@runtime_checkable
class LlmSession(Protocol):
    """An opened LLM candidate in the measuring worker."""

    def generate(self, prompt: list[int], new_tokens: int) -> Generation:
        """Greedy-decode exactly `new_tokens` tokens after `prompt` (no early stop at an end token), timing each."""

    def score(self, tokens: list[int]) -> "np.ndarray":
        """The next-token logits at every position of `tokens`: float32, shape (len(tokens), vocab)."""

    def kv_cache(self) -> tuple[int, int] | None:
        """The KV cache after the last `generate`: (bytes it holds, tokens it holds); None where the runtime hides it.

        Measured from the runtime's own cache tensors (their shapes and element sizes), not predicted."""

    def info(self) -> dict:
        """The settings actually in force (threads, precisions, device)."""


@dataclass
class LlmContext:
    """What an LLM plugin sees when it builds candidates."""

    facts: "LlmFacts"
    workdir: Path
    threads: int
    quick: bool = False
    gguf: Path | None = None  # a GGUF file the user brought (llama.cpp)
    log: Callable[[str], None] = lambda msg: None
    cancel: Callable[[], bool] = lambda: False
    shared: dict = field(default_factory=dict)  # exports plugins may reuse (one OpenVINO IR for several precisions)


class LlmPlugin:
    """Base class of the decoder-LLM plugins: declare what the plugin needs, build specs, open sessions."""

    name: str = ""
    title: str = ""  # the runtime in a reader's words ("OpenVINO GenAI")
    runtime: str = ""  # the runtime its candidates run on
    summary: str = ""
    requires: tuple[str, ...] = ()  # importable module names (checked with find_spec, not imported)
    packages: tuple[str, ...] = ()  # the pip names that provide `requires`, for the install line
    is_baseline: bool = False  # runs the model as it comes: what every candidate is compared against
    build_cost_s: float = 0.0  # typical seconds to build its candidates for a 0.5B model on 2 cores

    def check(self, facts: "LlmFacts", ctx: LlmContext | None = None) -> list[str]:
        """Every reason this plugin cannot run here; [] means it can."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if not missing:
            return []
        names = list(self.packages) or missing
        return [f"{missing_package_reason(' '.join(names))}; or pip install -e .[llm] for every LLM runtime"]

    def candidates(self, ctx: LlmContext) -> Iterable[LlmSpec | LlmSkip]:
        """Build artifacts under ctx.workdir and yield the specs to measure (and the ones that cannot be built)."""
        raise NotImplementedError(f"plugin {self.name} does not define candidates()")

    def open(self, spec: LlmSpec, facts: "LlmFacts") -> LlmSession:
        """In the worker: load the candidate for generating and scoring."""
        raise NotImplementedError(f"plugin {self.name} does not define open()")

    def describe(self, spec: LlmSpec) -> Description:
        """The candidate's plain title and the lines that apply it in the runtime's own API."""
        return Description(spec.label)

    def package(self, spec: LlmSpec, facts: "LlmFacts", dest: Path) -> list[Path]:
        """Write a hand-over package into `dest`: the model files and a run.py that generates with this runtime
        (`python run.py --check` generates a few tokens and exits 0). Returns the files written."""
        raise NotImplementedError(f"plugin {self.name} writes no package")
