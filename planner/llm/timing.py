"""The LLM measuring worker: open one candidate in a fresh process, time it token by token, score the text.

`measure_candidate` runs inside `run_isolated` (planner.measure.worker), so a runtime that crashes, hangs or
runs out of memory costs its candidate only. It times like the runtimes' own benchmarks: warm-up first, then
for each prompt length a few greedy generations of a fixed number of tokens (no early stop), each token's
arrival stamped as the runtime hands it over. TTFT is the first stamp; TPOT the gaps after it.
"""

from __future__ import annotations

import importlib.metadata
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.plugins.llm import LLM_GROUP, LlmPlugin, LlmSpec


@dataclass(frozen=True)
class MeasureSettings:
    """How a candidate is measured: the same for every candidate of a plan."""

    prompts: dict[int, tuple[int, ...]]  # prompt length -> its token ids (cut from the text)
    new_tokens: int  # generated per timed call
    repeats: int  # timed generations per prompt length
    windows: tuple[tuple[int, ...], ...]  # text windows scored for perplexity and KL
    greedy_prompts: tuple[tuple[int, ...], ...]  # prompts whose greedy continuations are compared
    greedy_tokens: int
    reference: str = ""  # the baseline's saved log-probabilities (.npy); '' for the baseline itself
    save_reference: str = ""  # where the baseline writes them
    deadline_s: float = 0.0  # seconds this candidate may spend timing (0: no limit); scoring always runs


@dataclass(frozen=True)
class LlmMeasurement:
    """What one candidate measured; every number here was timed or counted in its worker."""

    load_s: float
    ttft_ms: dict[int, tuple[float, ...]]  # prompt length -> TTFT samples
    tpot_ms: tuple[float, ...]  # every gap between tokens, at every prompt length
    tpot_by_length: dict[int, tuple[float, ...]]
    peak_rss_bytes: int  # the worker's peak resident memory after timing (before scoring)
    kv_measured: dict[int, tuple[int, int]]  # prompt length -> (KV bytes, tokens held) after its generation
    nll: tuple[tuple[float, ...], ...]  # per window, each scored token's negative log-likelihood (nats)
    kl: tuple[tuple[float, ...], ...] | None  # per window, KL(reference || candidate) per token; None: no reference
    greedy: tuple[tuple[int, ...], ...]
    info: dict = field(default_factory=dict)
    timed_generations: int = 0
    notes: tuple[str, ...] = ()


def load_plugin(name: str) -> LlmPlugin:
    """The LLM plugin registered under `name`."""
    found = [ep for ep in importlib.metadata.entry_points(group=LLM_GROUP) if ep.name == name]
    if not found:
        raise KeyError(f"no LLM plugin {name!r} (is it installed?)")
    return found[0].load()()


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def measure_candidate(spec: LlmSpec, folder: str, settings: MeasureSettings) -> LlmMeasurement:
    """Open `spec` with its plugin and measure it (runs in the worker process)."""
    from planner.models.llm import read_llm_folder

    facts = read_llm_folder(folder)
    plugin = load_plugin(spec.plugin)
    start = time.perf_counter()
    session = plugin.open(spec, facts)
    load_s = time.perf_counter() - start
    lengths = sorted(settings.prompts)
    for length in lengths:
        # Warm-up at every length: a runtime pays a one-off setup for each new input shape (OpenVINO: 13 ms against
        # 1.2 ms for a 128-token prompt of the tiny model), which is not what a served model's TTFT costs.
        session.generate(list(settings.prompts[length]), min(8, settings.new_tokens))
    ttft: dict[int, list[float]] = {n: [] for n in lengths}
    gaps: dict[int, list[float]] = {n: [] for n in lengths}
    kv: dict[int, tuple[int, int]] = {}
    notes: list[str] = []
    timed = 0
    began = time.perf_counter()
    for turn in range(settings.repeats):
        # Turns across lengths, so a slow spell of the machine touches every length alike.
        for length in lengths:
            if turn and settings.deadline_s and time.perf_counter() - began > settings.deadline_s:
                break
            out = session.generate(list(settings.prompts[length]), settings.new_tokens)
            if len(out.tokens) != settings.new_tokens:
                raise RuntimeError(f"the runtime generated {len(out.tokens)} tokens where {settings.new_tokens} "
                                   "were asked for (it stopped early)")
            timed += 1
            ttft[length].append(out.times_s[0] * 1e3)
            gaps[length] += list(np.diff(out.times_s) * 1e3)
            if length not in kv:
                cache = session.kv_cache()
                if cache is not None:
                    kv[length] = cache
    if settings.deadline_s and timed < settings.repeats * len(lengths):
        notes.append(f"timed {timed} generations of {settings.repeats * len(lengths)}: the budget ran out")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    nll, kl = _score(session, settings)
    greedy = tuple(session.generate(list(p), settings.greedy_tokens).tokens for p in settings.greedy_prompts)
    return LlmMeasurement(
        load_s=load_s, ttft_ms={n: tuple(v) for n, v in ttft.items() if v},
        tpot_ms=tuple(g for n in lengths for g in gaps[n]), tpot_by_length={n: tuple(v) for n, v in gaps.items()},
        peak_rss_bytes=int(peak), kv_measured=kv, nll=nll, kl=kl, greedy=greedy, info=dict(session.info()),
        timed_generations=timed, notes=tuple(notes))


def _score(session, settings: MeasureSettings) -> tuple[tuple[tuple[float, ...], ...], tuple | None]:
    """Each window's per-token negative log-likelihood, and the KL divergence from the reference's distributions.

    The baseline saves its log-probabilities (one array per plan) for the candidates' workers to compare with.
    """
    logps = []
    nll = []
    for window in settings.windows:
        logits = np.asarray(session.score(list(window)), dtype=np.float32)
        if logits.shape[0] != len(window):
            raise RuntimeError(f"the runtime scored {logits.shape[0]} positions of a {len(window)}-token window")
        logp = _log_softmax(logits[:-1])
        nll.append(tuple(float(-logp[i, window[i + 1]]) for i in range(len(window) - 1)))
        logps.append(logp.astype(np.float32))
    if settings.save_reference:
        np.save(Path(settings.save_reference), np.stack(logps) if logps else np.zeros((0,)), allow_pickle=False)
    if not settings.reference:
        return tuple(nll), None
    reference = np.load(settings.reference, mmap_mode="r")
    kl = []
    for ref, mine in zip(reference, logps):
        ref = np.asarray(ref, dtype=np.float64)
        width = min(ref.shape[-1], mine.shape[-1])  # a runtime may pad the vocabulary; the padding has no mass
        kl.append(tuple(float(v) for v in (np.exp(ref[:, :width]) * (ref[:, :width] - mine[:, :width])).sum(-1)))
    return tuple(nll), tuple(kl)
