"""The charts stay true at 80x24: each label on its own bar, followed by its value, on a log axis when the values
span decades (issue 38 found a 0.0502 ms candidate labelling a 42 ms bar)."""

from __future__ import annotations

import re

from tui_support import PlannerApp, SlowCandidateSession, drive, run_app, screen_text

from planner.report import figdata
from planner.tui import formatting as fmt
from planner.tui.screens.results import _lat, plot_series
from planner.tui.widgets.plots import LOG_SPAN, Scale, bar_rows, bar_text


def chart_rows(text: str) -> dict[str, tuple[int, str]]:
    """Each chart row on screen by its label: (the bar's length in eighths of a cell, the value after it)."""
    eighths = {ch: i + 1 for i, ch in enumerate("▏▎▍▌▋▊▉")}
    rows = {}
    for line in text.splitlines():
        found = re.search(r"▕ (.+?) +│(█*)([▏▎▍▌▋▊▉]?) (\S+)\s*$", line)
        if found:
            label, full, part, value = found.groups()
            rows[label] = (8 * len(full) + eighths.get(part, 0), value)
    return rows


def test_each_p50_label_sits_on_its_own_bar_with_its_own_value_at_80x24(tmp_path):
    session = SlowCandidateSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")
    shown: dict[str, tuple[int, str]] = {}
    expected: dict[str, float] = {}

    async def body(pilot):
        await drive(pilot, "results")
        await pilot.press("right_square_bracket")
        await pilot.pause()
        pane = app.current_pane
        labels, values = plot_series(pane._candidates, lambda c: _lat(c, "p50"))
        expected.update(zip(labels, values))
        text = screen_text(app)
        assert "p50 latency per candidate, ms (lower is better) · log scale" in text
        shown.update(chart_rows(text))

    run_app(app, body, size=(80, 24))
    assert min(expected.values()) < 0.05 and max(expected.values()) == 42.0
    # Every candidate's row: its label, its bar, and its own p50 after the bar.
    assert set(shown) == set(expected)
    assert {label: value for label, (_, value) in shown.items()} == {
        label: fmt.ms(v, unit=False) for label, v in expected.items()}
    # A longer bar is a slower candidate, and the sub-millisecond ones are told apart (none squeezed into a cell).
    by_value = sorted(expected, key=expected.get)
    lengths = [shown[label][0] for label in by_value]
    assert lengths == sorted(lengths) and lengths[0] >= 8 and lengths[-1] > 2 * lengths[0]


def test_values_spanning_decades_get_a_log_axis_marked_at_each_power_of_ten():
    scale = Scale.of([0.0364, 0.297, 42.0])
    assert scale.log and (scale.low, scale.high) == (0.01, 100)
    assert scale.ticks() == [0.01, 0.1, 1.0, 10.0, 100.0]
    assert scale.fraction(1.0) == 0.5
    # Within a decade, or with a value at 0: a linear axis from 0.
    assert not Scale.of([10.0, 40.1, 45.0]).log and Scale.of([10.0, 40.1, 45.0]).ticks() == [0, 20, 40]
    assert not Scale.of([0.0, 5.0]).log
    # The report's figures go to a log axis by the same rule.
    assert LOG_SPAN == figdata.LOG_SPAN


def test_a_bar_is_never_invisible_and_a_long_label_is_cut_not_the_value():
    assert bar_text(0.0001, 20) == "▏" and bar_text(0.0, 20) == "" and bar_text(1.0, 4) == "████"
    rows, _, label_width, cells = bar_rows(["a label far longer than the room it gets"], [3.0], 30)
    assert rows[0].value == "3" and rows[0].label.endswith("…") and len(rows[0].label) == label_width
    assert label_width + 2 + cells + 1 + len(rows[0].value) <= 30
