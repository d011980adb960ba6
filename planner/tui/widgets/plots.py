"""Charts: labelled bars drawn as text, one row per bar, and a line chart drawn with textual-plotext.

The bars are not plotext's: plotext places a horizontal bar and its tick label by rounding each to the
nearest row of its canvas on its own, so at 80x24 a label could sit beside another candidate's bar (or none).
Here a bar, its label and its value are one line of text, whatever the size.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Callable, Sequence

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget
from textual_plotext import PlotextPlot

from planner import units

LOG_SPAN = 10.0
"""Values whose largest is more than this many times their smallest are drawn on a log axis (the report's figures
use the same rule: planner.report.figdata.LOG_SPAN, which a test keeps equal to this)."""

LABEL_WIDTH = 18
"""The widest a bar's label gets; longer labels are cut with an ellipsis (callers shorten them first)."""

MIN_BAR_CELLS = 10
"""The narrowest the bars' area gets before labels are cut to make room."""

EIGHTHS = "▏▎▍▌▋▊▉█"
"""A bar's last cell, from one eighth of a cell to a full one."""


def spans_decades(values: Sequence[float]) -> bool:
    """Whether positive values span more than LOG_SPAN (a log axis reads them; a linear one hides the small)."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) > LOG_SPAN * min(positive)


def _nice_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) that cuts `span` into about four parts."""
    raw = span / 4
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


@dataclass(frozen=True)
class Scale:
    """Where a value falls along the bars' axis: linear from 0, or logarithmic between two powers of ten."""

    log: bool
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Scale:
        """The scale for these values: log when they span decades (none may be 0 or below then), else linear."""
        positive = [v for v in values if v > 0]
        if len(positive) == len(values) and spans_decades(positive):
            return cls(True, 10 ** math.floor(math.log10(min(positive))), 10 ** math.ceil(math.log10(max(positive))))
        return cls(False, 0.0, max([*values, 0.0]) or 1.0)

    def fraction(self, value: float) -> float:
        """How far along the axis (0 to 1) a value falls."""
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return max(value, 0.0) / self.high

    def ticks(self) -> list[float]:
        """The values the axis marks: each power of ten (log), or round steps from 0 (linear)."""
        if self.log:
            first, last = round(math.log10(self.low)), round(math.log10(self.high))
            return [10.0 ** k for k in range(first, last + 1)]
        step = _nice_step(self.high)
        return [i * step for i in range(int(self.high / step + 1e-9) + 1)]


def bar_text(fraction: float, cells: int) -> str:
    """A bar `fraction` of `cells` long, to an eighth of a cell; a value above the axis's start shows at least an
    eighth, so no measured bar is invisible."""
    eighths = max(round(fraction * cells * 8), 1 if fraction > 0 else 0)
    full, part = divmod(min(eighths, cells * 8), 8)
    return "█" * full + (EIGHTHS[part - 1] if part else "")


@dataclass(frozen=True)
class BarRow:
    """One line of the chart: the label, its bar and its value as printed."""

    label: str
    bar: str
    value: str


def bar_rows(labels: Sequence[str], values: Sequence[float], width: int,
             show: Callable[[float], str] = units.sig) -> tuple[list[BarRow], Scale, int, int]:
    """The rows of a chart `width` columns wide, with its scale, label width and bar cells: each label beside its
    own bar, the bar followed by the value as `show` writes it."""
    texts = [show(v) for v in values]
    value_width = max((len(t) for t in texts), default=0)
    label_width = min(max((len(label) for label in labels), default=0), LABEL_WIDTH)
    # "label │bar value": the label, a space and the axis, then the bars and a space before the value.
    label_width = max(min(label_width, width - 2 - 1 - value_width - MIN_BAR_CELLS), 1)
    cells = max(width - label_width - 2 - 1 - value_width, 1)
    scale = Scale.of(list(values))
    rows = [BarRow(label if len(label) <= label_width else label[: label_width - 1] + "…",
                   bar_text(scale.fraction(v), cells), text) for label, v, text in zip(labels, values, texts)]
    return rows, scale, label_width, cells


def axis_lines(scale: Scale, label_width: int, cells: int, width: int) -> tuple[str, str]:
    """The axis under the bars ('└──┬──┬') and the tick values under it, each value centred on its mark (kept
    within `width`) and left out where it would run into the one before."""
    marks = [" "] * (cells + 1)
    names = [" "] * width
    free = 0  # the first column a tick value may start at
    for tick in scale.ticks():
        at = round(scale.fraction(tick) * cells)
        if not 0 <= at <= cells:
            continue
        marks[at] = "┬"
        name = units.sig(tick)
        start = max(min(label_width + 1 + at - len(name) // 2, width - len(name)), 0)
        if start >= free and start + len(name) <= width:
            names[start:start + len(name)] = name
            free = start + len(name) + 1
    axis = " " * label_width + " └" + "".join("─" if m == " " else m for m in marks[1:])
    return axis, "".join(names).rstrip()


class BarChart(Widget):
    """Labelled horizontal bars, one row each, with the value after each bar and a log axis when values span
    decades (e.g. the p50 per candidate, the latency percentiles). As tall as its bars: put it in a scrolling
    container when there may be more of them than fit."""

    DEFAULT_CSS = """
    BarChart { height: auto; width: 1fr; }
    BarChart > .bar-chart--title { text-style: bold; }
    BarChart > .bar-chart--bar { color: $accent; }
    BarChart > .bar-chart--axis { color: $text-muted; }
    """

    COMPONENT_CLASSES = {"bar-chart--title", "bar-chart--bar", "bar-chart--axis"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._labels: list[str] = []
        self._values: list[float] = []
        self._title = ""
        self._unit = ""
        self._show: Callable[[float], str] = units.sig
        self._note = ""

    def plot(self, labels: Sequence[str], values: Sequence[float], *, title: str, unit: str = "",
             show: Callable[[float], str] = units.sig, note: str = "") -> None:
        """Draw the bars: `title` says what is plotted and in which unit (`unit` names it under the axis), `show`
        writes each value after its bar, `note` (what the labels abbreviate) goes under the axis."""
        self._labels, self._values = list(labels), [float(v) for v in values]
        self._title, self._unit, self._show, self._note = title, unit, show, note
        self.refresh(layout=True)

    def lines(self, width: int) -> list[Text]:
        """The chart `width` columns wide: title, one line per bar, the axis and its values."""
        title = self._title
        if self._values and Scale.of(self._values).log:
            title += " · log scale"
        styles = {name: self.get_component_rich_style(f"bar-chart--{name}", partial=True)
                  for name in ("title", "bar", "axis")}
        out = [Text(line, style=styles["title"]) for line in _wrap(title, width)]
        if not self._values:
            return [*out, Text("nothing measured yet", style=styles["axis"])]
        rows, scale, label_width, cells = bar_rows(self._labels, self._values, width, self._show)
        for row in rows:
            line = Text(f"{row.label:<{label_width}} ")
            line.append("│", style=styles["axis"])
            line.append(row.bar, style=styles["bar"])
            line.append(f" {row.value}")
            out.append(line)
        axis, ticks = axis_lines(scale, label_width, cells, width)
        out.append(Text(axis, style=styles["axis"]))
        unit = f" {self._unit}" if self._unit else ""
        out.append(Text(ticks + unit if len(ticks + unit) <= width else ticks, style=styles["axis"]))
        out += [Text(line, style=styles["axis"]) for line in (_wrap(self._note, width) if self._note else [])]
        return out

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """One line per bar, plus the title and the axis."""
        return len(self.lines(width))

    def render(self) -> Text:
        """The chart at the widget's width."""
        text = Text("\n").join(self.lines(self.size.width or 80))
        text.no_wrap = True
        return text


def _wrap(text: str, width: int) -> list[str]:
    """A title over as many lines as it needs (no word is lost at a narrow width)."""
    return textwrap.wrap(text, max(width, 10)) or [""]


class LineChart(PlotextPlot):
    """A line with markers, e.g. throughput against batch size."""

    DEFAULT_CSS = """
    LineChart { height: 1fr; min-height: 8; }
    """

    def plot(self, xs: Sequence[float], ys: Sequence[float], *, title: str, xlabel: str = "",
             ylabel: str = "") -> None:
        """Draw the line and repaint."""
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        if xs:
            plt.plot(list(xs), [float(y) for y in ys], marker="dot")
            plt.xticks(list(xs))
        if xlabel:
            plt.xlabel(xlabel)
        if ylabel:
            plt.ylabel(ylabel)
        self.refresh()
