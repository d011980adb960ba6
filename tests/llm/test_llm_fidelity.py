"""Perplexity change, KL and greedy agreement: verdicts a reader can trust, with intervals."""

from __future__ import annotations

import math

import numpy as np

from planner.llm.fidelity import greedy_agreement, judge, perplexity


def _windows(rng, shift=0.0, noise=0.0, n=4, length=64):
    base = [tuple(float(v) for v in rng.uniform(2.0, 4.0, length)) for _ in range(n)]
    other = [tuple(v + shift + (rng.normal(0, noise) if noise else 0.0) for v in w) for w in base]
    return tuple(base), tuple(other)


def test_perplexity_is_exp_of_the_mean_loss():
    assert math.isclose(perplexity(((1.0, 3.0), (2.0,))), math.exp(2.0))


def test_an_identical_candidate_meets_both_limits():
    ref, same = _windows(np.random.default_rng(0))
    kl = tuple(tuple(0.0 for _ in w) for w in same)
    greedy = ((1, 2, 3), (4, 5, 6))
    verdict = judge(ref, same, kl, greedy, greedy)
    assert verdict.verdict == "met" and verdict.perplexity_change.high == 0.0
    assert verdict.greedy.identical == 2 and verdict.tokens_scored == 4 * 64


def test_a_clearly_worse_candidate_misses():
    ref, worse = _windows(np.random.default_rng(1), shift=0.2)  # +22% perplexity
    verdict = judge(ref, worse, None, (), ())
    assert verdict.verdict == "missed"
    assert 0.2 < verdict.perplexity_change.low <= verdict.perplexity_change.value
    assert "limit +5%" in verdict.reason


def test_an_interval_that_straddles_the_limit_is_not_established():
    ref, noisy = _windows(np.random.default_rng(2), shift=0.05, noise=1.5, n=2, length=32)
    verdict = judge(ref, noisy, None, (), ())
    assert verdict.perplexity_change.low < 0.05 < verdict.perplexity_change.high
    assert verdict.verdict == "not established" and "straddles" in verdict.reason


def test_a_high_kl_misses_even_with_perplexity_unchanged():
    ref, same = _windows(np.random.default_rng(3))
    kl = tuple(tuple(0.2 for _ in w) for w in same)
    assert judge(ref, same, kl, (), ()).verdict == "missed"


def test_greedy_agreement_counts_first_divergence_and_share():
    agreement = greedy_agreement(((1, 2, 3, 4), (5, 6, 7, 8)), ((1, 2, 9, 9), (5, 6, 7, 8)))
    assert agreement.first_divergence == (2, None) and agreement.identical == 1
    assert agreement.share_differing == 2 / 8
