"""The LLM report's two figures: TTFT against prompt length (measured), and memory against context (weights plus
the KV cache, estimated from the config, with the measured KV points marked)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on servers, boards or CI

import matplotlib.pyplot as plt  # noqa: E402 - must follow the backend choice

from planner.llm.results import LlmCandidate, LlmPlan  # noqa: E402
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


def _finish(fig, ax, handles: list, path: Path, *, x: str, y: str, title: str) -> None:
    """Label, grid, legend below, save and close: what both figures end with."""
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    _legend_below(fig, handles, columns=1)
    _save(fig, path)
    plt.close(fig)


def _ttft(plan: LlmPlan, shown: list[LlmCandidate], path: Path) -> None:
    fig, ax = _figure(4.0)
    handles, values = [], []
    for c in shown:
        t = c.timings
        assert t is not None
        lengths = sorted(t.ttft_p50_ms)
        values += [t.ttft_p50_ms[n] for n in lengths]
        (line,) = ax.plot(lengths, [t.ttft_p50_ms[n] for n in lengths], marker="o",
                          label=c.title + (" (chosen)" if c.label == plan.winner else ""),
                          linewidth=2.2 if c.label == plan.winner else 1.2)
        handles.append(line)
    if values and max(values) > 10 * min(values):
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    _finish(fig, ax, handles, path, x="prompt length (tokens)", y="time to first token, p50 (ms)",
            title="Time to first token against prompt length (measured)")


def _memory(plan: LlmPlan, shown: list[LlmCandidate], path: Path) -> None:
    fig, ax = _figure(4.0)
    top = min(max(plan.context * 4, 2048), plan.facts.context)  # the planned context never passes the limit
    contexts = [int(top * i / 40) for i in range(41)]
    handles = []
    seen = set()
    for c in shown:
        key = (c.weights, c.kv)
        if key in seen:
            continue
        seen.add(key)
        weights = plan.facts.memory_bytes(c.weights, c.kv, 0)
        (line,) = ax.plot(contexts, [plan.facts.memory_bytes(c.weights, c.kv, n) / _MiB for n in contexts],
                          linestyle="--", label=f"{c.weights} weights, {c.kv} KV cache (estimate)")
        handles.append(line)
        measured = [(p.tokens, (weights + p.measured_bytes) / _MiB) for p in c.kv_points if p.measured_bytes]
        if measured:
            ax.plot(*zip(*measured), marker="o", linestyle="none", color=line.get_color())
    ax.axvline(plan.context, color="#c1121f", linewidth=1)
    ax.annotate(f" planned context {plan.context}", (plan.context, ax.get_ylim()[1]), fontsize="small",
                va="top", ha="left", color="#c1121f", xytext=(4, -2), textcoords="offset points")
    _finish(fig, ax, handles, path, x="context (tokens)", y="weights + KV cache (MiB)",
            title="Memory against context: estimated from the config; dots: KV caches measured")


def draw_llm_figures(plan: LlmPlan, folder: Path) -> dict[str, str]:
    """Draw the figures into folder/figures; returns name -> path relative to `folder` (none without measurements)."""
    shown = _shown(plan)
    if not shown:
        return {}
    target = Path(folder) / "figures"
    target.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for name, draw in (("ttft", _ttft), ("memory", _memory)):
        draw(plan, shown, target / f"{name}.png")
        drawn[name] = f"figures/{name}.png"
    return drawn
