"""Statistics on known sample sets: percentiles, IQR, the median's CI, and the sample-count gates."""

from __future__ import annotations

import math

import pytest

from planner.codec import from_data, to_data
from planner.measure import PERCENTILE_MIN_SAMPLES, LatencyStats, compute_stats
from planner.measure.stats import ci95_rel_of, median_ci_rank


def test_one_to_hundred() -> None:
    """1..100 gives the textbook linear-interpolation percentiles."""
    stats = compute_stats([float(v) for v in range(1, 101)])
    assert stats.samples == 100
    assert stats.p50_ms == pytest.approx(50.5)
    assert stats.mean_ms == pytest.approx(50.5)
    assert stats.min_ms == 1.0 and stats.max_ms == 100.0
    assert stats.iqr_ms == pytest.approx(75.25 - 25.75)
    assert stats.iqr_over_median == pytest.approx(49.5 / 50.5)
    assert stats.unstable
    assert stats.p90_ms == pytest.approx(90.1)
    assert stats.p95_ms is None  # 100 < 128
    assert stats.p99_ms is None
    # Binomial(100, 1/2): P(X <= 39) = 0.0176 <= 0.025 < P(X <= 40), so the CI is [x_(40), x_(61)].
    assert median_ci_rank(100) == 40
    assert stats.ci95_rel == pytest.approx((61 - 40) / 2 / 50.5)


def test_constant_samples_are_stable_with_zero_ci() -> None:
    """Identical samples have no spread at all."""
    stats = compute_stats([2.5] * 40)
    assert stats.ci95_rel == 0.0
    assert not stats.unstable
    assert stats.std_ms == 0.0
    assert stats.iqr_ms == 0.0


def test_bimodal_is_unstable() -> None:
    """Two modes far apart give an IQR well above 10% of the median."""
    stats = compute_stats([10.0] * 50 + [20.0] * 50)
    assert stats.unstable
    assert stats.iqr_over_median > 0.10


def test_small_spread_is_stable() -> None:
    """A 2% spread is well inside the 10% IQR rule."""
    stats = compute_stats([10.0 + 0.02 * (i % 11) for i in range(200)])
    assert not stats.unstable


@pytest.mark.parametrize(
    ("n", "p90", "p95", "p99"),
    [(10, False, False, False), (63, False, False, False), (64, True, False, False),
     (127, True, False, False), (128, True, True, False), (661, True, True, False),
     (700, True, True, True)],
)
def test_percentile_gates(n: int, p90: bool, p95: bool, p99: bool) -> None:
    """Tail percentiles appear only once the sample count supports them."""
    stats = compute_stats([float(i) for i in range(n)])
    assert (stats.p90_ms is not None) is p90
    assert (stats.p95_ms is not None) is p95
    assert (stats.p99_ms is not None) is p99


def test_gate_constants() -> None:
    """The gates follow LoadGen for p90/p99 and the documented 128 for p95."""
    assert PERCENTILE_MIN_SAMPLES == {"p90": 64, "p95": 128, "p99": 662}


def test_too_few_samples_for_ci() -> None:
    """Five samples cannot give 95% coverage with order statistics; six can."""
    assert math.isinf(compute_stats([1.0, 2.0, 3.0, 4.0, 5.0]).ci95_rel)
    assert median_ci_rank(5) is None
    assert median_ci_rank(6) == 1
    assert math.isfinite(ci95_rel_of([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))


def test_single_sample() -> None:
    """One sample: std 0, no CI."""
    stats = compute_stats([3.0])
    assert stats.samples == 1 and stats.std_ms == 0.0 and stats.p50_ms == 3.0
    assert math.isinf(stats.ci95_rel)


def test_ci_shrinks_with_more_samples() -> None:
    """The same distribution measured longer gives a tighter CI of the median."""
    base = [10.0 + (i * 37 % 100) / 100 for i in range(100)]
    assert ci95_rel_of(base * 10) < ci95_rel_of(base)


def test_large_n_rank_is_sane() -> None:
    """For large n the rank matches the normal approximation n/2 - 0.98 sqrt(n)."""
    n = 10_000
    rank = median_ci_rank(n)
    assert rank is not None
    assert abs(rank - (n / 2 - 0.98 * math.sqrt(n))) <= 2


def test_rejects_bad_input() -> None:
    """Empty or non-finite samples are errors, not silent NaNs."""
    with pytest.raises(ValueError):
        compute_stats([])
    with pytest.raises(ValueError):
        compute_stats([1.0, float("nan")])


def test_dict_round_trip() -> None:
    """to_data/from_data preserve every field, None and inf included."""
    for samples in ([1.0, 2.0, 3.0], [float(i) for i in range(700)]):
        stats = compute_stats(samples)
        again = from_data(to_data(stats), LatencyStats)
        assert again == stats
