"""Rank measured candidates: fidelity-passing ones by p50 latency, or by best throughput when only
a throughput is required. Returns a new ranking; the candidates are not touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.results.values import CandidateResult, Ranking, Status

BY_LATENCY = "p50 latency"
BY_THROUGHPUT = "best throughput"


def rank_candidates(candidates: Sequence[CandidateResult], requirements: Mapping[str, Any] | None = None) -> Ranking:
    """The ranking of `candidates` (indices, best first) under these requirements.

    A latency target the user stated ranks by its percentile (p95, p99) when every ranked candidate has that
    percentile measured, else by p50 and `by` says why; a throughput target alone ranks by best
    throughput.
    """
    reqs = requirements or {}
    by_throughput = bool(reqs.get("min_throughput")) and not reqs.get("latency_ms")
    ok = [i for i, c in enumerate(candidates) if c.status is Status.OK and c.latency_ms is not None]
    # Only a target the user stated (a flag or a file) changes the order; a default one keeps p50.
    stated = str((reqs.get("sources") or {}).get("latency_ms", "")) in ("flag", "file")
    percentile = str(reqs.get("latency_percentile") or "p50").lower() if reqs.get("latency_ms") and stated else "p50"
    if percentile not in ("p50", "p90", "p95", "p99"):
        percentile = "p50"
    by = BY_THROUGHPUT if by_throughput else BY_LATENCY
    if not by_throughput and percentile != "p50":
        if ok and all(_percentile(candidates[i], percentile) is not None for i in ok):
            by = f"{percentile} latency (the latency target's percentile)"
        else:
            by = f"{BY_LATENCY} ({percentile}, the latency target's percentile, was not measured for every candidate)"
            percentile = "p50"

    def key(i: int) -> float:
        c = candidates[i]
        if by_throughput:
            return -(c.best_throughput or 0.0)
        value = _percentile(c, percentile)
        return value if value is not None else float("inf")

    return Ranking(order=tuple(sorted(ok, key=key)), by=by)


def _percentile(c: CandidateResult, name: str) -> float | None:
    lat = c.latency_ms
    return getattr(lat, f"{name}_ms", None) if lat is not None else None
