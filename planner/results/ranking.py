"""Rank measured candidates and print the ranked table the CLI shows."""

from __future__ import annotations


def rank_candidates(results: dict) -> list[dict]:
    """Order fidelity-passing candidates by latency (or throughput when only that is required).

    Sets `rank` on each passing candidate, `results["ranking"]` (labels in order) and
    `results["best"]` (the top candidate's index), and returns the ranked list.
    """
    reqs = results.get("requirements", {})
    by_throughput = reqs.get("min_throughput") and not reqs.get("latency_ms")
    ok = [c for c in results["candidates"] if c["status"] == "ok" and c.get("latency_ms")]

    def key(c: dict) -> float:
        if by_throughput:
            best = max((p["samples_per_s"] for p in c.get("throughput") or []), default=0.0)
            return -best
        return c["latency_ms"]["p50_ms"]

    ranked = sorted(ok, key=key)
    for c in results["candidates"]:
        c.pop("rank", None)
    for i, c in enumerate(ranked, 1):
        c["rank"] = i
    results["ranking"] = [c["label"] for c in ranked]
    results["ranked_by"] = "best throughput" if by_throughput else "p50 latency"
    results["best"] = results["candidates"].index(ranked[0]) if ranked else None
    return ranked
