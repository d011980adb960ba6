"""Hardware step: the ceilings say when and how they were measured, and r measures them again (and says so)."""

from __future__ import annotations

from textual.widgets import Label
from tui_support import RecordedSession, run_app, screen_text, wait_for, wait_idle

from planner.tui.app import PlannerApp
from planner.tui.widgets.kv import KeyValues
from planner.tui.widgets.progress import RunProgress


def _ceilings_text(app) -> str:
    rows = app.query_one("#hardware").query_one("#ceilings", KeyValues).rows
    return "\n".join(f"{key}: {value}" for key, value in rows)


def test_measure_ceilings_measures_again_and_says_it_did(tmp_path):
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: session.ceilings is not None, 60, "the start-up ceilings")
        await wait_idle(pilot)
        assert getattr(session, "refreshed", 0) == 0  # start-up reads this machine's cached ceilings
        shown = _ceilings_text(app)
        # When and how they were measured, and how to measure them again.
        assert "Measured: measured 2026-11-21T05:49:58+00:00; quick mode; best of 3 repeats" in shown
        assert "press r to measure them again now" in shown
        await pilot.press("r")
        await wait_idle(pilot)
        assert session.refreshed == 1
        stage = str(app.query_one("#hardware").query_one(RunProgress).query_one("#stage", Label).render())
        assert stage == "ceilings measured again"
        assert "ceilings measured again" in screen_text(app)  # whole at 80x24, not cut
        assert "Again: measured again now: fp32 67.1 GFLOP/s (was 67.1 GFLOP/s)" in _ceilings_text(app)

    run_app(app, body)
