"""Rank measured candidates: fidelity-passing ones by p50 latency, or by best throughput when only
a throughput is required. Returns a new ranking; the candidates are not touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.results.values import CandidateResult, Ranking, Status

BY_LATENCY = "p50 latency"
BY_THROUGHPUT = "best throughput"


def rank_candidates(candidates: Sequence[CandidateResult], requirements: Mapping[str, Any] | None = None) -> Ranking:
    """The ranking of `candidates` (indices, best first) under these requirements."""
    reqs = requirements or {}
    by_throughput = bool(reqs.get("min_throughput")) and not reqs.get("latency_ms")
    ok = [i for i, c in enumerate(candidates) if c.status is Status.OK and c.latency_ms is not None]

    def key(i: int) -> float:
        c = candidates[i]
        if by_throughput:
            return -(c.best_throughput or 0.0)
        return c.latency_ms.p50_ms if c.latency_ms else float("inf")

    return Ranking(order=tuple(sorted(ok, key=key)), by=BY_THROUGHPUT if by_throughput else BY_LATENCY)
