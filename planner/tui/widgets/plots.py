"""Charts drawn with textual-plotext; each title says what is plotted and in which unit."""

from __future__ import annotations

from typing import Sequence

from textual_plotext import PlotextPlot

LABEL_WIDTH = 18


class BarChart(PlotextPlot):
    """Labelled bars, e.g. latency percentiles or p50 per candidate."""

    DEFAULT_CSS = """
    BarChart { height: 1fr; min-height: 8; }
    """

    def plot(self, labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str = "",
             horizontal: bool = False) -> None:
        """Draw the bars (horizontal ones keep long labels readable) and repaint."""
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        if labels:
            shown = [label if len(label) <= LABEL_WIDTH else label[: LABEL_WIDTH - 1] + "…" for label in labels]
            plt.bar(shown, [float(v) for v in values], width=0.6 if not horizontal else 0.4,
                    orientation="horizontal" if horizontal else "vertical")
        if ylabel:
            plt.ylabel(ylabel)
        self.refresh()


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
