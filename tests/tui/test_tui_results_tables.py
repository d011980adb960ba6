"""Results step, More tables: the interaction 2x2 with its factor and verdict, compression and device targets."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Static, TabbedContent
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text

from planner.results.interaction import Interaction, InteractionCell
from planner.tui.screens.results import NO_TABLES

PAIR = Interaction(
    architecture="redesign (needs retraining)", hardware="onnxruntime all seq 1t",
    cells=(InteractionCell("baseline", "torch eager fp32 (cpu)", 200.0, 1.0),
           InteractionCell("architecture", "redesign (needs retraining)", 50.0, 4.0),
           InteractionCell("hardware", "onnxruntime all seq 1t", 100.0, 2.0),
           InteractionCell("combined", "both", 40.0, 5.0)),
    factor=0.625, verdict="conflict", needs_retraining=True)


class InteractionSession(RecordedSession):
    """The recorded run, with an interaction pair measured after ranking (as the real plan does)."""

    def optimize(self, **kwargs):
        candidates = super().optimize(**kwargs)
        self.update(interactions=(PAIR,))
        return candidates


def _tables(app) -> str:
    return str(app.query_one("#extra-tables", Static).render())


def test_more_tables_shows_the_interaction_table_factor_and_verdict(tmp_path):
    app = PlannerApp(model="demo:tiny", session=InteractionSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        app.query_one("#results-tabs", TabbedContent).active = "tab-tables"
        await pilot.pause(0.3)
        screen = screen_text(app)
        assert "Interaction of architecture and hardware" in screen
        # At 80x24 the section scrolls: its end shows the whole 2x2, the factor and the verdict.
        box = app.query_one("#tables-box", VerticalScroll)
        assert box.max_scroll_y > 0
        box.scroll_end(animate=False)
        await pilot.pause(0.3)
        screen = screen_text(app)
        assert "200 ms (1x)" in screen and "100 ms (2x)" in screen
        # The two rows of the 2x2 differ (no truncation makes them read alike).
        assert "50 ms (4x)" in screen and "40 ms (5x)" in screen
        assert "= 0.62: conflict" in screen or "= 0.63: conflict" in screen

    run_app(app, body)


def test_more_tables_explains_when_the_run_has_none(tmp_path):
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        assert _tables(app) == NO_TABLES

    run_app(app, body)


class EdgeSession(RecordedSession):
    """The recorded run read as an edge plan, with an INT8 file beside it: compression and tier tables."""

    def optimize(self, **kwargs):
        candidates = super().optimize(**kwargs)
        best = candidates[1]
        self.add_candidate(replace(best, label="onnxruntime int8 dynamic (cpu, 2t)", precision="int8",
                                   size_bytes=(best.size_bytes or 4_000_000) // 4))
        self.update(target="edge")
        return self.results.candidates


def _pages(app) -> str:
    """Every line of the tables tab as a user paging through it at 80x24 reads them, in order."""
    lines: list[str] = []
    for line in screen_text(app).splitlines()[3:-1]:
        lines.append(line[18:])
    return "\n".join(lines)


class RenderingSession(InteractionSession):
    """Saves the real report (not the recorded one), so the preview shows this run's sections."""

    def finish(self, *, status=None, write_report=True):
        from planner.pipeline import PlanOutcome
        from planner.report import render_report_files

        super().finish(status=status, write_report=write_report)
        return PlanOutcome(self.results, self.out_dir, render_report_files(self.results, self.out_dir))


@pytest.mark.parametrize(("session_cls", "step", "tab", "box_id", "settle_s", "shown", "not_shown"), [
    # An edge plan's tables: rows too wide for 62 columns read as one entry each, with every value (nothing cut).
    pytest.param(EdgeSession, "results", "tab-tables", "#tables-box", 0.3,
                 ("Compression", "Device targets", "onnxruntime int8 dynamic (cpu, 2t): Bits/param 8", "Tiers met"),
                 ("…",), id="edge-plan-compression-and-device-targets"),
    pytest.param(RenderingSession, "report", None, "#report-box", 0.5,
                 ("Interaction of architecture and hardware", "200 ms (1x)", "40 ms (5x)", "0.62: conflict"),
                 (), id="report-preview-interaction-table"),
])
def test_paging_through_a_step_shows_its_tables(session_cls, step, tab, box_id, settle_s, shown, not_shown, tmp_path):
    app = PlannerApp(model="demo:tiny", session=session_cls(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, step)
        if tab is not None:
            app.query_one("#results-tabs", TabbedContent).active = tab
        await pilot.pause(settle_s)
        box = app.query_one(box_id, VerticalScroll)
        pages = [_pages(app)]
        while box.scroll_y < box.max_scroll_y:
            box.scroll_page_down(animate=False)
            # Until the app is idle and its layout refreshed (no fixed wait: the report preview is dozens of pages).
            await pilot.pause()
            pages.append(_pages(app))
        seen = " ".join(" ".join(pages).split())
        assert [text for text in shown if text not in seen] == []
        assert [text for text in not_shown if text in seen] == []

    run_app(app, body)
