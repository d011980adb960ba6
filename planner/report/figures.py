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
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from planner import units  # noqa: E402
from planner.io import write_atomic  # noqa: E402
from planner.report import figdata  # noqa: E402
from planner.report.data import ReportData  # noqa: E402
from planner.report.fidelity_verdict import MEANING, Verdict  # noqa: E402
from planner.results import PlanResults  # noqa: E402
from planner.results.status_look import look  # noqa: E402

_BOUND_COLOURS = {"compute": "#264653", "memory": "#e76f51", "overhead": "#e9c46a"}
_MARKERS = {"p50": "o", "p90": "^", "p95": "s", "p99": "D"}
# Lowest risk darkest; orange and red for the two a reader must weigh (kept apart for colour-blind readers).
_VERDICT_COLOURS = {Verdict.BASELINE: "#adb5bd", Verdict.EXACT: "#1d3557", Verdict.PASSED: "#6c9ac3",
                    Verdict.NOT_ESTABLISHED: "#f4a261", Verdict.REJECTED: "#d62828"}
_TARGET_COLOUR = "#c1121f"
_DPI = 120
_WIDTH = 7.5  # inches: 900 px at _DPI, read at about 700 px in a Markdown viewer
_LABEL_CHARS = 30  # a candidate's name wraps at about this many characters


def _wrap(label: str, width: int = _LABEL_CHARS) -> str:
    """A label on lines of about `width` characters, so long candidate names stay readable."""
    return "\n".join(textwrap.wrap(label, width)) or label


def _figure(height: float, width: float = _WIDTH, **kwargs: Any) -> tuple[Figure, Any]:
    """A figure whose layout makes room for every label and a legend outside the axes."""
    return plt.subplots(figsize=(width, height), layout="constrained", **kwargs)


def _log_axis(axis: Any) -> None:
    """A log scale labelled in plain numbers at 1, 2 and 5 of each decade ('0.02', '50'), not '2x10^-2' at every
    minor tick, which run into each other over a decade or two."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _legend_below(fig: Figure, handles: list[Any], columns: int = 2) -> None:
    """The legend under the plot, never over the data."""
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(columns, len(handles)), fontsize="small",
                   frameon=False)


def _latency(data: ReportData) -> Figure:
    series = figdata.latency_series(data)
    fig, ax = _figure(1.6 + 0.42 * len(series))
    values = [v for s in series for v in (s.min_ms, s.max_ms, *s.percentiles.values()) if v is not None]
    for y, s in enumerate(series):
        colour = look(s.status).colour
        if s.min_ms is not None and s.max_ms is not None:
            ax.plot([s.min_ms, s.max_ms], [y, y], color=colour, linewidth=2, alpha=0.6)
            ax.plot([s.min_ms, s.max_ms], [y, y], "|", color=colour, markersize=12)
        for name, value in s.percentiles.items():
            ax.plot(value, y, _MARKERS[name], color=colour, markersize=7, markeredgecolor="#333333",
                    markeredgewidth=0.5)
    ax.set_yticks(range(len(series)),
                  [_wrap(s.label + (" (baseline)" if s.is_reference else "")) for s in series], fontsize="small")
    ax.invert_yaxis()
    if figdata.spans_decades(values):
        ax.set_xscale("log")
        _log_axis(ax.xaxis)
    ax.set_xlabel("latency per call (ms)" + (", log scale" if ax.get_xscale() == "log" else ""))
    ax.set_title("Latency per candidate: min to max, with percentiles")
    ax.grid(axis="x", which="both", alpha=0.3)
    shown = [p for p in _MARKERS if any(p in s.percentiles for s in series)]
    handles: list[Any] = [plt.Line2D([], [], marker=_MARKERS[p], linestyle="", color="#555555", label=p)
                          for p in shown]
    handles.append(plt.Line2D([], [], marker="|", color="#555555", markersize=12, label="min to max"))
    handles += [plt.Rectangle((0, 0), 1, 1, color=look(st).colour, label=f"status: {st}")
                for st in dict.fromkeys(s.status for s in series)]
    _legend_below(fig, handles, columns=4)
    return fig


def _throughput(data: ReportData) -> Figure:
    series = figdata.throughput_series(data)
    fig, ax = _figure(4.2 + 0.16 * len(series))
    # Past ten lines the default colours repeat; tab20 keeps every candidate's colour its own.
    palette = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
    colours = [palette(i % palette.N) for i in range(len(series))]
    markers = "osD^v<>p*h"
    handles = []
    for i, s in enumerate(series):
        xs, ys = zip(*s.points)
        name = _wrap(s.label + (" (baseline)" if s.is_reference else ""), 34)
        line, = ax.plot(xs, ys, marker=markers[i % len(markers)], color=colours[i],
                        linewidth=2.5 if s.is_reference else 1.5, markersize=6, label=name)
        handles.append(line)
        for x, y in s.points:
            if s.knee is not None and x == s.knee:
                ax.plot(x, y, "o", markersize=14, markerfacecolor="none", color=line.get_color())
    ax.set_xscale("log", base=2)
    batches = sorted({x for s in series for x, _ in s.points})
    ax.set_xticks(batches, [f"{b:g}" for b in batches])  # batch sizes, not powers of two
    ax.minorticks_off()
    if len(batches) == 1:
        ax.set_xlim(batches[0] / 1.5, batches[0] * 1.5)
    if figdata.spans_decades([y for s in series for _, y in s.points]):
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    ax.set_xlabel("batch size")
    ax.set_ylabel("samples/s" + (", log scale" if ax.get_yscale() == "log" else ""))
    ax.set_title("Throughput against batch size")
    ax.grid(alpha=0.3, which="both")
    if any(s.knee is not None for s in series):
        handles.append(plt.Line2D([], [], marker="o", markersize=12, markerfacecolor="none", linestyle="",
                                  color="#555555", label="knee: past it, more batch buys little"))
    _legend_below(fig, handles, columns=2 if len(handles) > 3 else len(handles))
    return fig


def _place_labels(ax: Any, points: list[tuple[str, float, float]], *, avoid: list[tuple[float, float]] | None = None,
                  fontsize: float = 7) -> None:
    """Label points without overlap: each label tries four sides of its point and is left off when none is free
    of the other labels and of every marker in `avoid` (data coordinates); the table beside the figure names every
    point. Call it once the layout is final (fig.canvas.draw()), so the places measured are where they are drawn."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    radius = 6  # pixels around a marker that a label keeps clear of
    markers = [Bbox.from_extents(x - radius, y - radius, x + radius, y + radius)
               for x, y in ax.transData.transform(list(avoid))] if avoid else []
    placed: list[Bbox] = []
    for name, x, y in points:
        for dx, dy, ha in ((5, 3, "left"), (5, -10, "left"), (-5, 3, "right"), (-5, -10, "right")):
            text = ax.annotate(name, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, ha=ha)
            text.set_in_layout(False)
            box = text.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in placed + markers):
                placed.append(box)
                break
            text.remove()


def _roofline(data: ReportData) -> Figure:
    rl = figdata.roofline(data)
    if rl is None:
        raise ValueError("no roofline data")
    fig, ax = _figure(5.4)
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
    if rl.model_point:
        ax.scatter([rl.model_point.intensity], [rl.model_point.attained], marker="*", s=160,
                   color="#d62828", zorder=4, label="whole model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s\n(FLOPs / measured time)")
    ax.set_title("Roofline: each layer against the machine's ceilings")
    ax.grid(which="both", alpha=0.2)
    handles, _ = ax.get_legend_handles_labels()
    _legend_below(fig, handles)
    fig.canvas.draw()  # the final layout, so the labels' places are measured where they will be drawn
    busiest = sorted(rl.points, key=lambda p: p.attained, reverse=True)[:8]
    everything = rl.points + ([rl.model_point] if rl.model_point else [])
    _place_labels(ax, [(p.name, p.intensity, p.attained) for p in busiest],
                  avoid=[(p.intensity, p.attained) for p in everything])
    return fig


def _ranked(bars: figdata.RankedBars, *, colour_of: Callable[[figdata.RankedBar], str],
            key_handles: list[Any], title: str) -> Figure:
    """Horizontal bars of p50, fastest at the top, with the target line, each tail tick and the winner outlined;
    each bar's p50 and speedup in a column at the right."""
    rows, target = bars.bars, bars.target
    fig, ax = _figure(1.9 + 0.36 * len(rows) + 0.2 * len(key_handles))
    values = [b.p50_ms for b in rows] + [b.tail_ms for b in rows if b.tail_ms] + (
        [target.ms] if target is not None and bars.target_side == "on" else [])
    if bars.log_scale:
        ax.set_xscale("log")
        _log_axis(ax.xaxis)
        left, right = min(values) / 1.6, max(values) * 1.6
    else:
        left, right = 0.0, max(values) * 1.08
    ys = list(range(len(rows)))
    ax.barh(ys, [b.p50_ms - left for b in rows], left=left, height=0.7, color=[colour_of(b) for b in rows],
            edgecolor=["black" if b.is_winner else "none" for b in rows],
            linewidth=[2.2 if b.is_winner else 0 for b in rows], zorder=2)
    tails = [(b.tail_ms, y) for y, b in enumerate(rows) if b.tail_ms is not None]
    if tails:
        ax.plot([t for t, _ in tails], [y for _, y in tails], "|", color="black", markersize=13, mew=2, zorder=3)
    if target is not None and bars.target_side == "on":
        ax.axvline(target.ms, color=_TARGET_COLOUR, linestyle="--", linewidth=1.6, zorder=4)
    ax.set_xlim(left, right)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # fastest at the top
    ax.set_yticks(ys, [_wrap(b.label + (" (baseline)" if b.is_reference else "")) for b in rows],
                  fontsize="small")
    # The numbers sit in their own column at the right, where no line or bar can run through them.
    column = ax.secondary_yaxis("right")
    column.set_yticks(ys, [_value_text(b) for b in rows], fontsize="small")
    column.tick_params(length=0)
    for axis in (ax, column):
        for tick, bar in zip(axis.get_yticklabels(), rows):
            if bar.is_winner:
                tick.set_fontweight("bold")
    ax.set_xlabel("p50 latency (ms)" + (", log scale" if bars.log_scale else ""))
    ax.set_title(title)
    ax.grid(axis="x", which="both", alpha=0.3, zorder=0)
    handles = list(key_handles)
    if target is not None and bars.target_side == "on":
        handles.append(plt.Line2D([], [], color=_TARGET_COLOUR, linestyle="--", label=target.words))
    elif target is not None:
        # Far off the scale: said in the row with the most room at its right, without squeezing every bar.
        roomiest = min(ys, key=lambda y: max(rows[y].p50_ms, rows[y].tail_ms or 0.0))
        arrow = r"$\rightarrow$" if bars.target_side == "right" else r"$\leftarrow$"
        ax.text(0.985, roomiest, f"{target.percentile} target {units.ms(target.ms)} "
                + ("is far right \u2192" if bars.target_side == "right" else "is far left \u2190"),
                transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize="small",
                color=_TARGET_COLOUR)
        handles.append(plt.Line2D([], [], marker=arrow, color=_TARGET_COLOUR, linestyle="", markersize=12,
                                  label=f"{target.words},\nfar off the scale to the {bars.target_side}"))
    if tails:
        handles.append(plt.Line2D([], [], marker="|", color="black", markersize=11, mew=2, linestyle="",
                                  label=f"{bars.tail}, the target's percentile"))
    if any(b.is_winner for b in rows):
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", linewidth=2,
                                     label="winner: the ranking's best, shipped" if any(b.shipped for b in rows)
                                     else "winner: the ranking's best"))
    _legend_below(fig, handles)
    return fig


def _value_text(bar: figdata.RankedBar) -> str:
    """A bar's p50 and speedup for the right-hand column: '0.0167 ms, 5.68x'."""
    text = units.ms(bar.p50_ms) + (f", {units.speedup(bar.speedup)}" if bar.speedup is not None else "")
    return text + ("  shipped" if bar.shipped else "  winner" if bar.is_winner else "")


def _decision(data: ReportData) -> Figure:
    bars = figdata.ranked_bars(data)
    seen = dict.fromkeys(b.verdict for b in sorted(bars.bars, key=lambda b: list(Verdict).index(b.verdict)))
    key = [plt.Rectangle((0, 0), 1, 1, color=_VERDICT_COLOURS[v], label=f"{v}: {MEANING[v]}") for v in seen]
    return _ranked(bars, colour_of=lambda b: _VERDICT_COLOURS[b.verdict], key_handles=key,
                   title="Speed against risk: p50 latency, coloured by fidelity verdict")


def _candidates(data: ReportData) -> Figure:
    bars = figdata.ranked_bars(data)
    key = [plt.Rectangle((0, 0), 1, 1, color=look(s).colour, label=f"status: {s}")
           for s in dict.fromkeys(b.status for b in bars.bars)]
    return _ranked(bars, colour_of=lambda b: look(b.status).colour, key_handles=key,
                   title="Candidates by p50 latency, fastest first")


def _interaction(data: ReportData) -> Figure:
    pairs = figdata.interaction_bars(data)
    fig, axes = _figure(3.9, width=max(_WIDTH, 4.5 * len(pairs)), ncols=len(pairs), squeeze=False)
    width = 0.38
    for ax, pair in zip(axes[0], pairs):
        for r, (runtime, colour) in enumerate(zip(pair.runtimes, ("#8d99ae", "#2a9d8f"))):
            xs = [g + (r - 0.5) * width for g in range(2)]
            values = [pair.p50_ms[g][r] for g in range(2)]
            bars = ax.bar([x for x, v in zip(xs, values) if v is not None], [v for v in values if v is not None],
                          width, color=colour, label=runtime)
            ax.bar_label(bars, labels=[units.ms(v) for v in values if v is not None], fontsize=8, padding=2)
        ax.set_xticks(range(2), [_wrap(g) for g in pair.groups], fontsize="small")
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title(pair.title, fontsize=9)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    return fig


_DRAW: dict[str, Callable[[ReportData], Figure]] = {
    figdata.DECISION: _decision, figdata.LATENCY: _latency, figdata.THROUGHPUT: _throughput,
    figdata.ROOFLINE: _roofline, figdata.CANDIDATES: _candidates, figdata.INTERACTION: _interaction,
}


def figure(name: str, results: PlanResults | Mapping[str, Any]) -> Figure:
    """One figure (a name in figdata.FIGURES) drawn from results, not saved; the caller closes it (plt.close)."""
    return _DRAW[name](ReportData(results))


def _save(fig: Figure, path: Path) -> None:
    # A tight box keeps whatever the layout could not fit (a long label, the legend below) on the canvas.
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=_DPI, bbox_inches="tight", pad_inches=0.08))


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
