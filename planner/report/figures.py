"""The report's figures as PNG files (matplotlib, Agg backend), drawn from the same data the
Markdown describes (planner.report.figdata)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Callable, Mapping

import matplotlib

matplotlib.use("Agg")  # headless: no display on servers, boards or CI, and no GUI toolkit import

import matplotlib.pyplot as plt  # noqa: E402 - must follow the backend choice
from matplotlib.figure import Figure  # noqa: E402

from planner import units  # noqa: E402
from planner.io import write_atomic  # noqa: E402
from planner.report import figdata  # noqa: E402
from planner.report.data import ReportData  # noqa: E402
from planner.results import PlanResults  # noqa: E402
from planner.results.status_look import look  # noqa: E402

_BOUND_COLOURS = {"compute": "#264653", "memory": "#e76f51", "overhead": "#e9c46a"}
_MARKERS = {"p50": "o", "p90": "^", "p95": "s", "p99": "D"}
_DPI = 120


def _latency(data: ReportData) -> Figure:
    series = figdata.latency_series(data)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.6 * len(series)))
    for row, s in enumerate(series):
        y = len(series) - 1 - row
        colour = look(s.status).colour
        if s.min_ms is not None and s.max_ms is not None:
            ax.plot([s.min_ms, s.max_ms], [y, y], color=colour, linewidth=2, alpha=0.6)
            ax.plot([s.min_ms, s.max_ms], [y, y], "|", color=colour, markersize=14)
        for name, value in s.percentiles.items():
            ax.plot(value, y, _MARKERS[name], color=colour, markersize=8,
                    label=name if row == 0 else None)
    ax.set_yticks(range(len(series)))
    ax.set_yticklabels([s.label + (" (baseline)" if s.is_reference else "") for s in reversed(series)])
    ax.set_xlabel("latency per call (ms)")
    ax.set_title("Latency: min–max with percentiles (from summary statistics)")
    ax.grid(axis="x", alpha=0.3)
    handles = [plt.Line2D([], [], marker=m, linestyle="", color="#333333", label=p)
               for p, m in _MARKERS.items()]
    ax.legend(handles=handles, loc="lower right", fontsize="small")
    return fig


def _throughput(data: ReportData) -> Figure:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    series = figdata.throughput_series(data)
    for s in series:
        xs, ys = zip(*s.points)
        line, = ax.plot(xs, ys, marker="o", linewidth=2.5 if s.is_reference else 1.5,
                        label=s.label + (" (baseline)" if s.is_reference else ""))
        knees = [(x, y) for x, y in s.points if s.knee is not None and x == s.knee]
        for x, y in knees:
            ax.plot(x, y, "o", markersize=14, markerfacecolor="none", color=line.get_color())
    ax.set_xscale("log", base=2)
    batches = sorted({x for s in series for x, _ in s.points})
    ax.set_xticks(batches, [f"{b:g}" for b in batches])  # batch sizes, not powers of two
    ax.minorticks_off()
    ax.set_xlabel("batch size")
    ax.set_ylabel("samples/s")
    ax.set_title("Throughput against batch size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def _roofline(data: ReportData) -> Figure:
    rl = figdata.roofline(data)
    if rl is None:
        raise ValueError("no roofline data")
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [p.intensity for p in rl.points] + ([rl.model_point.intensity] if rl.model_point else [])
    ridge = rl.peak_flops / rl.bandwidth
    # Every roof's ridge is on the axis, so the flat top of the int8 roof shows even right of every layer.
    ridges = [ridge] + [peak / rl.bandwidth for _, peak in rl.other_roofs]
    lo, hi = min(xs + ridges) / 4, max(xs + ridges) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [min(rl.peak_flops, rl.bandwidth * x) for x in grid], color="#333333", linewidth=2,
            label=f"roofline ({rl.peak_label} peak, memory bandwidth)")
    ax.axvline(ridge, color="#999999", linestyle=":", linewidth=1, label="ridge point")
    for (name, peak), style in zip(rl.other_roofs, ("--", "-.", (0, (5, 1)), (0, (3, 1, 1, 1)))):
        ax.plot(grid, [min(peak, rl.bandwidth * x) for x in grid], color="#555555", linewidth=1, linestyle=style,
                label=f"{name} roof")
    for bound in sorted({p.bound for p in rl.points}):
        pts = [p for p in rl.points if p.bound == bound]
        ax.scatter([p.intensity for p in pts], [p.attained for p in pts], s=36,
                   color=_BOUND_COLOURS.get(bound, "#8d99ae"), zorder=3,
                   label=f"{bound}-bound layers" if bound else "layers (no verdict)")
    for p in sorted(rl.points, key=lambda p: p.attained, reverse=True)[:8]:
        ax.annotate(p.name, (p.intensity, p.attained), fontsize=7, xytext=(4, 2),
                    textcoords="offset points")
    if rl.model_point:
        ax.scatter([rl.model_point.intensity], [rl.model_point.attained], marker="*", s=160,
                   color="#d62828", zorder=4, label="whole model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s (FLOPs / measured time)")
    ax.set_title("Roofline")
    ax.grid(which="both", alpha=0.2)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def _candidates(data: ReportData) -> Figure:
    bars = figdata.candidate_bars(data)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(bars)))
    labels = [b[0] for b in bars]
    ax.barh(range(len(bars)), [b[1] for b in bars],
            color=[look(b[2]).colour for b in bars])
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("p50 latency (ms)")
    ax.set_title("Candidates by p50 latency")
    seen = sorted({b[2] for b in bars})
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=look(s).colour, label=s)
                       for s in seen], fontsize="small", loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _interaction(data: ReportData) -> Figure:
    pairs = figdata.interaction_bars(data)
    fig, axes = plt.subplots(1, len(pairs), figsize=(5 * len(pairs), 3.6), squeeze=False)
    width = 0.38
    for ax, pair in zip(axes[0], pairs):
        for r, (runtime, colour) in enumerate(zip(pair.runtimes, ("#8d99ae", "#2a9d8f"))):
            xs = [g + (r - 0.5) * width for g in range(2)]
            values = [pair.p50_ms[g][r] for g in range(2)]
            bars = ax.bar([x for x, v in zip(xs, values) if v is not None], [v for v in values if v is not None],
                          width, color=colour, label=runtime)
            ax.bar_label(bars, labels=[units.ms(v) for v in values if v is not None], fontsize=7, padding=2)
        ax.set_xticks(range(2), [_wrap(g) for g in pair.groups], fontsize=8)
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title(pair.title, fontsize=9)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper right")
    return fig


def _wrap(label: str, width: int = 28) -> str:
    """A tick label on lines of about `width` characters, so long candidate names stay readable."""
    return "\n".join(textwrap.wrap(label, width)) or label


_DRAW: dict[str, Callable[[ReportData], Figure]] = {
    figdata.LATENCY: _latency, figdata.THROUGHPUT: _throughput,
    figdata.ROOFLINE: _roofline, figdata.CANDIDATES: _candidates, figdata.INTERACTION: _interaction,
}


def _save(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=_DPI))


def draw_figures(results: PlanResults | Mapping[str, Any], fig_dir: Path, *,
                 relative_to: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Draw every figure whose data exists into fig_dir.

    Returns (name → path relative to `relative_to`, for the Markdown links) and (name → why a
    figure with data was not drawn). A figure left over from an earlier render is removed when
    this one is skipped, so the folder never holds a stale picture.
    """
    data = ReportData(results)
    fig_dir.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, str] = {}
    notes: dict[str, str] = {}
    for name in figdata.FIGURES:
        path = fig_dir / f"{name}.png"
        if figdata.missing_reason(data, name):
            path.unlink(missing_ok=True)
            continue
        fig = None
        try:
            fig = _DRAW[name](data)
            _save(fig, path)
        except (ValueError, TypeError, OverflowError, RuntimeError) as exc:
            # Odd values (e.g. a zero on a log axis) cost one figure, never the report.
            notes[name] = f"{type(exc).__name__}: {exc}"
            path.unlink(missing_ok=True)
            continue
        finally:
            if fig is not None:
                plt.close(fig)
        drawn[name] = path.relative_to(relative_to).as_posix()
    return drawn, notes
