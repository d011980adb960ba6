"""What the CLI prints: JSON, the baseline profile and the ranked candidate table."""

from __future__ import annotations

import json


def print_json(data: object) -> None:
    """Print an object as indented JSON on stdout."""
    print(json.dumps(data, indent=2, default=str))


def format_baseline(b: dict) -> str:
    """A readable profile in the shape of seed 002's 'overall performance profile'."""
    lat = b["latency_ms"]
    m = b["model"]
    lines = [f"Baseline profile: {m['source']} ({m['parameters']:,} parameters, "
             f"{m['size_bytes'] / 2**20:.1f} MiB), input {'x'.join(map(str, b['input_shape']))}, "
             f"{b['runtime']}", ""]
    pct = [f"p{q} {lat[f'p{q}_ms']:.2f} ms" for q in (95, 99) if lat.get(f"p{q}_ms") is not None]
    missing = [f"p{q}" for q in (90, 95, 99) if lat.get(f"p{q}_ms") is None]
    lines.append(f"Latency      p50 {lat['p50_ms']:.2f} ms" + (", " + ", ".join(pct) if pct else "")
                 + f"; mean {lat['mean_ms']:.2f} ± {lat['std_ms']:.2f} ms; {lat['samples']} samples"
                 + (f" ({', '.join(missing)} need more samples)" if missing else ""))
    if lat.get("unstable"):
        lines.append(f"             UNSTABLE: IQR/median {lat['iqr_over_median']:.0%} > 10%; "
                     "close other programs and re-run")
    if b["throughput"]:
        best = max(b["throughput"], key=lambda p: p["samples_per_s"])
        pts = ", ".join(f"b{p['batch']} {p['samples_per_s']:.1f}/s" for p in b["throughput"])
        lines.append(f"Throughput   {pts}")
        lines.append(f"             best {best['samples_per_s']:.1f} samples/s at batch {best['batch']}"
                     + (f"; knee at batch {b['knee_batch']}" if b.get("knee_batch") else ""))
    if b.get("flops_per_sample"):
        gflops = b["flops_per_sample"] / 1e9
        achieved = b["flops_per_sample"] / (lat["p50_ms"] / 1e3) / 1e9
        lines.append(f"Compute      {gflops:.2f} GFLOPs per sample (2 per MAC); "
                     f"{achieved:.1f} GFLOP/s achieved at batch 1")
    mem = b.get("peak_memory_bytes")
    lines.append(f"Memory       peak {mem / 2**20:.0f} MiB ({b['memory_basis']}); weights "
                 f"{m['size_bytes'] / 2**20:.1f} MiB" if mem else "Memory       not measured")
    if b.get("peak_activation_bytes"):
        lines[-1] += f"; largest activation {b['peak_activation_bytes'] / 2**20:.1f} MiB"
    c = b["ceilings"]
    peak = c["peak_flops"].get("fp32")
    lines.append(f"Ceilings     fp32 {peak / 1e9:.1f} GFLOP/s, {c['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s "
                 f"({c['source']})" if peak else f"Ceilings     {c['source']}")
    bn = b.get("bottleneck") or {}
    if bn.get("bound"):
        lines.append(f"Bottleneck   {bn['bound']}-bound: {bn.get('explanation', '')}")
    threads = b.get("threads", {})
    if threads:
        lines.append("Threads      " + ", ".join(f"{k}={v}" for k, v in threads.items() if v is not None))
    layers = sorted((x for x in b["layers"] if x.get("time_ms") is not None),
                    key=lambda x: x["time_ms"], reverse=True)[:5]
    if layers:
        lines += ["", "Top layers by time:"]
        for x in layers:
            verdict = (b.get("layer_verdicts") or {}).get(x["key"], {}).get("bound", "")
            lines.append(f"  {x['key']:<18} {x['type']:<18} {x['time_ms']:7.2f} ms "
                         f"{(x.get('time_share') or 0):6.1%}  {x['flops'] / 1e9:6.2f} GFLOPs  "
                         f"AI {x['intensity']:6.1f}  {verdict}")
    if b["findings"]:
        lines += ["", "Architecture findings (ranked by impact):"]
        for i, f in enumerate(b["findings"][:8], 1):
            lines.append(f"  {i}. [{f['severity']}] {f['title']} — {f['impact']:.0%} "
                         f"{f['impact_basis']}; layers: {', '.join(f['layers'][:5])}"
                         + (" …" if len(f['layers']) > 5 else ""))
            lines.append(f"     {f['advice']}")
    lines.append(f"\nMeasured in {b['wall_s']:.0f} s; reproduce: {b['reproduce']}")
    return "\n".join(lines)


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
