"""The Model step never throws measured work away silently, and a failed load says which model is still loaded."""

from __future__ import annotations

from textual.widgets import Input, Label
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text, wait_for, wait_idle

from planner.tui.screens.confirm import ConfirmDiscard


def test_reloading_after_an_optimize_asks_first_and_n_keeps_everything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        measured = len(app.session.results.candidates) - 1
        await pilot.press("2", "r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question")
        text = " ".join(screen_text(app).replace("█", " ").split())
        assert f"the profile and {measured} measured candidates of demo:tiny" in text and "not saved" in text
        await pilot.press("n")
        await wait_idle(pilot)
        assert len(session.load_calls) == 1 and len(app.session.results.candidates) == measured + 1
        assert "optimize" in app.session.state.done
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: len(session.load_calls) == 2, 10, "the second load")
        await wait_idle(pilot)
        assert app.session.baseline is None and "optimize" not in app.session.state.done

    run_app(app, body)


def test_a_failed_load_says_the_previous_model_is_still_loaded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: app.session.model is not None, 30, "the start-up load")
        await wait_idle(pilot)
        await pilot.press("2")
        app.query_one("#source", Input).value = "demo:no-such-model"
        await pilot.press("r")
        await wait_idle(pilot)
        status = str(app.query_one("#model #status", Label).render())
        assert status == "not loaded; still loaded: demo:tiny (its steps are kept)"
        assert app.session.model is not None and app.session.model.source == "demo:tiny"

    run_app(app, body)
