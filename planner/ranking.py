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


def _fmt(value, fmt: str, missing: str = "—") -> str:
    return missing if value is None else format(value, fmt)


def format_ranking(results: dict) -> str:
    """The ranked candidate table, then rejected/failed ones with their reasons."""
    rows = sorted(results["candidates"], key=lambda c: (c.get("rank") is None, c.get("rank") or 0))
    head = (f"{'#':>2} {'candidate':<44} {'p50 ms':>8} {'p95 ms':>8} {'best/s':>8} "
            f"{'mem MiB':>7} {'cosine':>8} {'speedup':>7} status")
    lines = [f"Candidates ranked by {results.get('ranked_by', 'p50 latency')} "
             f"(status: {results.get('status')})", head, "-" * len(head)]
    for c in rows:
        lat = c.get("latency_ms") or {}
        cos = (c.get("fidelity") or {}).get("cosine")
        best = max((p["samples_per_s"] for p in c.get("throughput") or []), default=None)
        mem = c.get("peak_memory_bytes")
        lines.append(
            f"{_fmt(c.get('rank'), 'd', ''):>2} {c['label'][:44]:<44} {_fmt(lat.get('p50_ms'), '.2f'):>8} "
            f"{_fmt(lat.get('p95_ms'), '.2f'):>8} {_fmt(best, '.1f'):>8} "
            f"{_fmt(mem / 2**20 if mem else None, '.0f'):>7} {_fmt(cos, '.5f'):>8} "
            f"{_fmt(c.get('speedup'), '.2f'):>6}x {c['status']}")
    problems = [c for c in rows if c["status"] in ("rejected", "failed", "skipped")]
    if problems:
        lines += ["", "Not ranked:"]
        lines += [f"  {c['label']}: {c['status']}: {c['reason']}" for c in problems]
    for s in results.get("skipped_plugins", []):
        lines.append(f"  plugin {s['plugin']} skipped: {'; '.join(s['reasons'])}")
    if any(c.get("latency_ms", {}).get("p95_ms") is None for c in rows if c.get("latency_ms")):
        lines.append("\n— p95 needs at least 128 samples; a slow model or a quick run gives fewer "
                     "within the time cap.")
    for c in rows:
        if c.get("rank") == 1:
            lines += ["", f"Best: {c['label']} — reproduce with:", f"  {c['reproduce']}"]
    return "\n".join(lines)
