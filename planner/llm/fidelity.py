"""A language model's fidelity to the original: perplexity, the KL divergence of its next-token distributions, and
how its greedy generations diverge, each with its sample count and a 95% interval.

The intervals come from a block bootstrap over scored tokens (blocks of consecutive tokens resampled together,
since neighbouring tokens' losses are correlated), seeded so a plan re-rendered gives the same figures. A claim
whose interval straddles its threshold is "not established", never "met".
"""

from __future__ import annotations

import math

import numpy as np

from planner.llm.results import GreedyAgreement, Interval, LlmFidelity

PERPLEXITY_CHANGE_LIMIT = 0.05
"""The largest relative perplexity increase a candidate may show by default (5%)."""
KL_LIMIT = 0.05
"""The largest mean KL divergence (nats per token) of the next-token distributions by default."""
_BLOCK = 16
_RESAMPLES = 1000


def perplexity(nll: tuple[tuple[float, ...], ...]) -> float:
    """exp of the mean negative log-likelihood over every scored token."""
    flat = [v for window in nll for v in window]
    return math.exp(sum(flat) / len(flat)) if flat else float("nan")


def _blocks(values: list[np.ndarray]) -> list[np.ndarray]:
    """Each window's values cut into blocks of consecutive tokens: the bootstrap's units."""
    return [w[i:i + _BLOCK] for w in values for i in range(0, len(w), _BLOCK) if len(w[i:i + _BLOCK])]


def _bootstrap(blocks: list[np.ndarray], statistic, seed: int = 0) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of `statistic` over resampled blocks."""
    rng = np.random.default_rng(seed)
    n = len(blocks)
    values = []
    for _ in range(_RESAMPLES):
        picked = [blocks[i] for i in rng.integers(0, n, n)]
        values.append(statistic(np.concatenate(picked)))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def greedy_agreement(reference: tuple[tuple[int, ...], ...], candidate: tuple[tuple[int, ...], ...]) -> GreedyAgreement:
    """Compare greedy continuations prompt by prompt."""
    firsts: list[int | None] = []
    differing = compared = identical = 0
    for ref, mine in zip(reference, candidate):
        first = next((i for i, (a, b) in enumerate(zip(ref, mine)) if a != b), None)
        firsts.append(first)
        identical += first is None
        differing += sum(a != b for a, b in zip(ref, mine))
        compared += min(len(ref), len(mine))
    return GreedyAgreement(prompts=len(firsts), tokens_each=max((len(r) for r in reference), default=0),
                           identical=identical, first_divergence=tuple(firsts),
                           share_differing=differing / compared if compared else 0.0)


def judge(reference_nll: tuple[tuple[float, ...], ...], nll: tuple[tuple[float, ...], ...],
          kl: tuple[tuple[float, ...], ...] | None, reference_greedy: tuple[tuple[int, ...], ...],
          greedy: tuple[tuple[int, ...], ...], *, ppl_limit: float = PERPLEXITY_CHANGE_LIMIT,
          kl_limit: float = KL_LIMIT) -> LlmFidelity:
    """A candidate's fidelity to the original, scored on the same windows, with a verdict against both limits."""
    tokens = sum(len(w) for w in nll)
    ref = [np.asarray(w, dtype=np.float64) for w in reference_nll]
    mine = [np.asarray(w, dtype=np.float64) for w in nll]
    if [len(w) for w in ref] != [len(w) for w in mine] or not tokens:
        return LlmFidelity(perplexity(nll), tokens, len(nll), None, None, None, "not established",
                           "the candidate was not scored on the original's text windows")
    diff_blocks = _blocks([m - r for m, r in zip(mine, ref)])
    mean_diff = float(np.mean(np.concatenate(diff_blocks)))
    low, high = _bootstrap(diff_blocks, np.mean)
    change = Interval(math.expm1(mean_diff), math.expm1(low), math.expm1(high))
    kl_interval = None
    if kl is not None:
        # KL is never negative; a value a hair below 0 is rounding in the log-probabilities of identical outputs.
        kl_blocks = _blocks([np.maximum(np.asarray(w, dtype=np.float64), 0.0) for w in kl])
        k_low, k_high = _bootstrap(kl_blocks, np.mean, seed=1)
        kl_interval = Interval(float(np.mean(np.concatenate(kl_blocks))), k_low, k_high)
    agreement = greedy_agreement(reference_greedy, greedy)
    verdict, reason = _verdict(change, kl_interval, ppl_limit, kl_limit, tokens)
    return LlmFidelity(perplexity(nll), tokens, len(nll), change, kl_interval, agreement, verdict, reason)


def reference_fidelity(nll: tuple[tuple[float, ...], ...], greedy: tuple[tuple[int, ...], ...]) -> LlmFidelity:
    """The original's own perplexity: the figure each candidate is compared with."""
    return LlmFidelity(perplexity(nll), sum(len(w) for w in nll), len(nll), None, None,
                       GreedyAgreement(len(greedy), max((len(g) for g in greedy), default=0), len(greedy),
                                       tuple(None for _ in greedy), 0.0),
                       "reference", "the original model")


def _verdict(change: Interval, kl: Interval | None, ppl_limit: float, kl_limit: float,
             tokens: int) -> tuple[str, str]:
    """met when both intervals lie within their limits, missed when either lies wholly past it, else not established."""
    parts = [f"perplexity {change.value:+.2%} (95% interval {change.low:+.2%} to {change.high:+.2%}, "
             f"limit +{ppl_limit:.0%})"]
    if kl is not None:
        parts.append(f"KL {kl.value:.4f} nats per token ({kl.low:.4f} to {kl.high:.4f}, limit {kl_limit:g})")
    facts = f"{'; '.join(parts)}, over {tokens} tokens"
    if change.low > ppl_limit or (kl is not None and kl.low > kl_limit):
        return "missed", facts
    if change.high <= ppl_limit and (kl is None or kl.high <= kl_limit):
        return "met", facts
    return "not established", f"{facts}: the interval straddles a limit; score more text to settle it"
