"""The LLM report's two figures: TTFT against prompt length (measured), and memory against context (weights plus
the KV cache, estimated from the config, with the measured KV points marked)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on servers, boards or CI

import matplotlib.pyplot as plt  # noqa: E402 - must follow the backend choice

from planner.llm.results import LlmCandidate, LlmPlan  # noqa: E402
from planner.models.llm import WEIGHT_BYTES, kv_cache_bytes_at  # noqa: E402
from planner.report.figures import _figure, _legend_below, _log_axis, _save  # noqa: E402

_MiB = 1 << 20
_SHOWN = 6  # candidates per figure: the fastest, and the original


def _shown(plan: LlmPlan) -> list[LlmCandidate]:
    measured = [c for c in plan.candidates if c.status == "measured" and c.timings]
    measured.sort(key=lambda c: -c.timings.decode_tokens_per_s)  # type: ignore[union-attr]
    picked = measured[:_SHOWN]
    base = plan.baseline
    if base is not None and base not in picked:
        picked.append(base)
    return picked


def _ttft(plan: LlmPlan, path: Path) -> None:
    fig, ax = _figure(4.0)
    handles = []
    for c in _shown(plan):
        t = c.timings
        assert t is not None
        lengths = sorted(t.ttft_p50_ms)
        (line,) = ax.plot(lengths, [t.ttft_p50_ms[n] for n in lengths], marker="o",
                          label=c.title + (" (chosen)" if c.label == plan.winner else ""),
                          linewidth=2.2 if c.label == plan.winner else 1.2)
        handles.append(line)
    values = [v for c in _shown(plan) for v in (c.timings.ttft_p50_ms.values() if c.timings else ())]
    if values and max(values) > 10 * min(values):
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("time to first token, p50 (ms)")
    ax.set_title("Time to first token against prompt length (measured)")
    ax.grid(alpha=0.3)
    _legend_below(fig, handles, columns=1)
    _save(fig, path)
    plt.close(fig)


def _memory(plan: LlmPlan, path: Path) -> None:
    fig, ax = _figure(4.0)
    top = max(plan.context * 4, 2048)
    top = min(top, plan.facts.context) if plan.facts.context >= plan.context else top
    contexts = [int(top * i / 40) for i in range(41)]
    handles = []
    seen = set()
    for c in _shown(plan):
        key = (c.weights, c.kv)
        if key in seen:
            continue
        seen.add(key)
        weights = plan.facts.parameters * WEIGHT_BYTES.get(c.weights, 4.0)
        (line,) = ax.plot(contexts, [(weights + kv_cache_bytes_at(plan.facts, n, c.kv)) / _MiB for n in contexts],
                          linestyle="--", label=f"{c.weights} weights, {c.kv} KV cache (estimate)")
        handles.append(line)
        measured = [(p.tokens, (weights + p.measured_bytes) / _MiB) for p in c.kv_points if p.measured_bytes]
        if measured:
            ax.plot(*zip(*measured), marker="o", linestyle="none", color=line.get_color())
    ax.axvline(plan.context, color="#c1121f", linewidth=1)
    ax.annotate(f" planned context {plan.context}", (plan.context, ax.get_ylim()[1]), fontsize="small",
                va="top", ha="left", color="#c1121f", xytext=(4, -2), textcoords="offset points")
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("weights + KV cache (MiB)")
    ax.set_title("Memory against context: estimated from the config; dots: KV caches measured")
    ax.grid(alpha=0.3)
    _legend_below(fig, handles, columns=1)
    _save(fig, path)
    plt.close(fig)


def draw_llm_figures(plan: LlmPlan, folder: Path) -> dict[str, str]:
    """Draw the figures into folder/figures; returns name -> path relative to `folder` (none without measurements)."""
    if not _shown(plan):
        return {}
    target = Path(folder) / "figures"
    target.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for name, draw in (("ttft", _ttft), ("memory", _memory)):
        draw(plan, target / f"{name}.png")
        drawn[name] = f"figures/{name}.png"
    return drawn
