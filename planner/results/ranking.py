"""Rank measured candidates: fidelity-passing ones by latency, or by the most rows/s at each one's best
batch and stream count when the user asked for a minimum throughput and stated no latency target.
Returns a new ranking; the candidates are not touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner import units
from planner.codec import to_data
from planner.results.decisions import Requirements
from planner.results.values import CandidateResult, Ranking, Status

BY_LATENCY = "p50 latency"
BY_THROUGHPUT = "best throughput"


def rank_candidates(candidates: Sequence[CandidateResult],
                    requirements: Requirements | Mapping[str, Any] | None = None) -> Ranking:
    """The ranking of `candidates` (indices, best first) under these requirements (typed, or their JSON form
    as results.json holds them).

    A latency target the user stated ranks by its percentile (p95, p99) when every ranked candidate has that
    percentile measured, else by p50 and `by` says why. A minimum throughput with no latency target the
    user stated ranks by the most rows/s measured at any batch and stream count (the batch sweep and
    parallel streams), and `by` names the batch and streams the leaders need.
    """
    # The rules read the JSON form, which typed requirements give and callers holding a file's JSON pass.
    reqs: Mapping[str, Any] = to_data(requirements) if isinstance(requirements, Requirements) else requirements or {}
    ok = [i for i, c in enumerate(candidates) if c.status is Status.OK and c.latency_ms is not None]
    # Only a target the user stated (a flag or a file) changes the order; a default one keeps p50.
    stated = str((reqs.get("sources") or {}).get("latency_ms", "")) in ("flag", "file")
    # A default latency target does not outrank a stated throughput (files without sources: as before).
    latency_first = bool(reqs.get("latency_ms")) and (stated or not reqs.get("sources"))
    by_throughput = bool(reqs.get("min_throughput")) and not latency_first
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
            peak = c.peak_rate()
            return -(peak.samples_per_s if peak else 0.0)
        value = _percentile(c, percentile)
        return value if value is not None else float("inf")

    order = tuple(sorted(ok, key=key))
    if by_throughput:
        by = _throughput_by([candidates[i] for i in order])
    return Ranking(order=order, by=by)


def _throughput_by(ranked: Sequence[CandidateResult], *, named: int = 3) -> str:
    """'best throughput at each candidate's best batch and stream count (A: batch 8, 2 streams; ...)'."""
    needs = []
    for c in ranked[:named]:
        peak = c.peak_rate()
        if peak is not None:
            streams = f"{peak.streams} streams" if peak.streams > 1 else "1 stream"
            needs.append(f"{c.label}: {units.rate(peak.samples_per_s)} at batch {peak.batch}, {streams}")
    if not needs:
        return BY_THROUGHPUT
    more = "; the rest in their rows" if len(ranked) > named else ""
    return f"{BY_THROUGHPUT} at each candidate's best batch and stream count ({'; '.join(needs)}{more})"


def _percentile(c: CandidateResult, name: str) -> float | None:
    lat = c.latency_ms
    return getattr(lat, f"{name}_ms", None) if lat is not None else None
