"""Latency statistics: percentiles gated by sample count, spread, and a distribution-free CI of the median.

Rules, so that every number the planner prints is one the samples can support:

* p50 is always reported; a tail percentile only when there are enough samples for it
  (``PERCENTILE_MIN_SAMPLES``). MLPerf LoadGen's rule gives 64 samples for a p90 and 662 for a
  p99; both leave about 6.4-6.6 samples beyond the percentile, so p95 uses the same rule:
  6.4 / 0.05 = 128 samples.
* Percentiles use numpy's default linear interpolation (samples 1..100 give p50 = 50.5).
* A measurement is *unstable* when IQR / median > 10% (the rule of ``torch.utils.benchmark``).
* ``ci95_rel`` is the half-width of the distribution-free 95% confidence interval of the median,
  divided by the median. The interval is [x_(l), x_(n-l+1)] (order statistics, 1-based), with
  ``l`` the largest index for which the Binomial(n, 1/2) tail gives coverage of at least 95%:
  2 * P(X <= l-1) <= 0.05. It needs no assumption about the shape of the distribution, which
  matters for latencies (skewed, often multimodal). Fewer than 6 samples cannot reach 95%
  coverage (two-sided 1 - 2 / 2**5 < 0.95), so ``ci95_rel`` is ``inf`` then.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np

from planner.results.values import LatencyStats

PERCENTILE_MIN_SAMPLES: dict[str, int] = {"p90": 64, "p95": 128, "p99": 662}
"""The fewest samples for which each tail percentile is reported (else it is None)."""

UNSTABLE_IQR_OVER_MEDIAN = 0.10
"""IQR / median above this marks a measurement unstable (torch.utils.benchmark's threshold)."""

CI_LEVEL = 0.95
"""Coverage of the confidence interval of the median."""


@lru_cache(maxsize=4096)
def median_ci_rank(n: int) -> int | None:
    """Return the 1-based rank ``l`` so that [x_(l), x_(n-l+1)] is a >=95% CI of the median, or None."""
    if n < 1:
        return None
    # log C(n, k) for k = 0..n by cumulative sums, so large n neither overflows nor underflows.
    k = np.arange(1, n + 1, dtype=np.float64)
    log_comb = np.concatenate(([0.0], np.cumsum(np.log(n - k + 1) - np.log(k))))
    cdf = np.cumsum(np.exp(log_comb - n * math.log(2.0)))
    alpha_half = (1.0 - CI_LEVEL) / 2.0
    # cdf[l-1] = P(X <= l-1); the largest l meeting the bound, searched only below the median.
    ok = np.nonzero(cdf[: n // 2 + 1] <= alpha_half + 1e-12)[0]
    if ok.size == 0:
        return None
    return int(ok[-1]) + 1


def median_ci95(sorted_samples: np.ndarray) -> tuple[float, float] | None:
    """Return the distribution-free 95% CI (low, high) of the median of *sorted* samples, or None."""
    n = int(sorted_samples.size)
    rank = median_ci_rank(n)
    if rank is None:
        return None
    return float(sorted_samples[rank - 1]), float(sorted_samples[n - rank])


def ci95_rel_of(samples_ms: Sequence[float] | np.ndarray) -> float:
    """Return the half-width of the median's 95% CI over the median (``inf`` with too few samples)."""
    arr = np.sort(np.asarray(samples_ms, dtype=np.float64))
    return _ci95_rel_sorted(arr)


def _ci95_rel_sorted(arr: np.ndarray) -> float:
    bounds = median_ci95(arr)
    if bounds is None:
        return math.inf
    low, high = bounds
    half_width = (high - low) / 2.0
    median = float(np.median(arr))
    if median <= 0.0:
        # A zero median only happens with a clock too coarse to see the work; any spread is infinite.
        return 0.0 if half_width == 0.0 else math.inf
    return half_width / median


def compute_stats(samples_ms: Sequence[float]) -> LatencyStats:
    """Summarize latency samples (milliseconds); raises ValueError for no samples or non-finite ones."""
    arr = np.sort(np.asarray(samples_ms, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("compute_stats needs a non-empty 1-D sequence of latencies")
    if not np.all(np.isfinite(arr)):
        raise ValueError("latency samples must be finite numbers")
    n = int(arr.size)
    p25, p50, p75, p90, p95, p99 = (float(v) for v in np.percentile(arr, [25, 50, 75, 90, 95, 99]))
    iqr = p75 - p25
    iqr_over_median = iqr / p50 if p50 > 0.0 else (0.0 if iqr == 0.0 else math.inf)
    return LatencyStats(
        samples=n,
        mean_ms=float(np.mean(arr)),
        std_ms=float(np.std(arr, ddof=1)) if n > 1 else 0.0,
        min_ms=float(arr[0]),
        max_ms=float(arr[-1]),
        p50_ms=p50,
        p90_ms=p90 if n >= PERCENTILE_MIN_SAMPLES["p90"] else None,
        p95_ms=p95 if n >= PERCENTILE_MIN_SAMPLES["p95"] else None,
        p99_ms=p99 if n >= PERCENTILE_MIN_SAMPLES["p99"] else None,
        iqr_ms=iqr,
        iqr_over_median=iqr_over_median,
        unstable=iqr_over_median > UNSTABLE_IQR_OVER_MEDIAN,
        ci95_rel=_ci95_rel_sorted(arr),
    )
