"""The Model step never throws measured work away silently, and a failed load says which model is still loaded."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Label, Select
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text, wait_for, wait_idle

from planner.tui.screens.confirm import ConfirmDiscard


def dialog_text(app) -> str:
    """The words inside the dialog's frame, joined (the form behind it shows beside the frame)."""
    inside = [line[line.index("█") + 1:line.rindex("█")] for line in screen_text(app).splitlines() if "█" in line]
    return " ".join(" ".join(inside).replace("▀", " ").replace("▄", " ").split())


def pane_words(app) -> str:
    """The step's pane as words: right of the step list, without the notice's bar, wrapped lines joined."""
    right = [line.split("▕", 1)[1] for line in screen_text(app).splitlines() if "▕" in line]
    return " ".join(" ".join(right).replace("█", " ").split())


async def summary_text(pilot) -> str:
    """The screen with the Model step's summary scrolled into view (at 80x24 it sits below the form)."""
    pilot.app.query_one("#model VerticalScroll").scroll_end(animate=False)
    await pilot.pause()
    return screen_text(pilot.app)


def test_reloading_after_an_optimize_asks_first_and_n_keeps_everything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        measured = len(app.session.results.candidates) - 1
        await pilot.press("2", "r")
        # The dialog drawn, not only pushed: its words are read below.
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard) and "Load anyway" in screen_text(app),
                       10, "the question")
        text = dialog_text(app)
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


def test_typed_validation_data_and_output_kind_reach_the_engine_and_stay_for_a_reload(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "val").mkdir()
    folder = Path("val")  # as typed: the engine reads it from its own folder, the test's
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: app.session.model is not None, 30, "the start-up load")
        await wait_idle(pilot)
        await pilot.press("2")
        app.query_one("#val-data", Input).value = "val"
        app.query_one("#val-preset", Select).value = "unit"
        app.query_one("#output-kinds", Input).value = "--output-kind 0=regression"
        await pilot.press("r")
        await wait_idle(pilot)
        # The engine's load got them as `planner plan --val-data ... --val-preset unit --output-kind ...` gives them.
        call = session.load_calls[-1]
        assert (call["val_data"], call["val_preset"], call["output_kinds"]) == (folder, "unit", ("0=regression",))
        assert session.given.output_kind is not None and session.given.output_kind[0] == "regression"
        text = await summary_text(pilot)
        assert f"Val data       {folder}, unit preset" in text and "Output kind    0=regression" in text
        await pilot.press("r")  # the same model again: the form still holds what it is judged on
        await wait_for(pilot, lambda: len(session.load_calls) == 3, 10, "the reload")
        await wait_idle(pilot)
        call = session.load_calls[-1]
        assert (call["val_data"], call["val_preset"], call["output_kinds"]) == (folder, "unit", ("0=regression",))
        assert "Output kind    0=regression" in await summary_text(pilot)

    run_app(app, body)


def test_a_missing_folder_or_a_kind_that_does_not_parse_is_said_on_the_model_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: app.session.model is not None, 30, "the start-up load")
        await wait_idle(pilot)
        await pilot.press("2")
        app.query_one("#val-data", Input).value = "no-such-folder"
        await pilot.press("r")
        await wait_idle(pilot)
        assert "Error: the Val data folder no-such-folder (step 2) does not exist" in pane_words(app)
        assert "not loaded; still loaded: demo:tiny" in str(app.query_one("#model #status", Label).render())
        assert session.given.val_data is None and "Val data       /" not in await summary_text(pilot)

        app.query_one("#val-data", Input).value = ""
        app.query_one("#output-kinds", Input).value = "0=heatmap, output"
        await pilot.press("r")
        await wait_idle(pilot)
        text = pane_words(app)
        assert "the Output kind field (step 2) '0=heatmap': unknown kind 'heatmap'" in text
        assert "use one of classes, dense, sequence, ctc, embedding, regression" in text
        assert session.given.output_kinds == ()

    run_app(app, body)
