"""Saving from the TUI: no folder appears until the user saves, and saving again says it overwrote."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from textual.widgets import Input, Label, RichLog
from tui_support import PlannerApp, RecordedSession, TwoModels, drive, run_app, screen_text, wait_for, wait_idle

from planner.pipeline import PlanSession
from planner.results import read_results
from planner.results.counts import CandidateCounts
from planner.tui.screens.confirm import ConfirmDiscard


def test_opening_and_profiling_create_no_folder_until_saved(tmp_path, monkeypatch):
    """The default reports/<date>-<model>-<target> folder is made by Save, not by start-up or Profile."""
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession())  # no --out: the default folder

    async def body(pilot):
        await drive(pilot, "profile")
        assert app.session.baseline is not None
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        await pilot.press("9")
        await pilot.pause()
        # What s will do, now that the profile gave it something to save (not what it said before the profile).
        assert str(app.query_one("#report #saved", Label).render()) == (
            "Not saved yet: press s to save the results to the folder above.")
        await pilot.press("s")
        await wait_idle(pilot)
        saved = str(app.query_one("#report #saved", Label).render())
        assert saved.startswith("Saved") and "overwrote" not in saved
        assert app.session.out_dir is not None and (app.session.out_dir / "report.md").is_file()

    run_app(app, body)


def test_saving_over_an_earlier_report_says_so(tmp_path):
    """A folder that already holds a report (say from yesterday's session) is overwritten, and the TUI says so."""
    folder = tmp_path / "earlier"
    folder.mkdir()
    (folder / "report.md").write_text("# an earlier report\n")
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "profile")
        await pilot.press("9")
        app.query_one("#out-dir", Input).value = str(folder)
        await pilot.press("s")
        await wait_idle(pilot)
        assert "(overwrote the earlier save)" in str(app.query_one("#report #saved", Label).render())
        assert "Saved again (overwrote the earlier save)" in screen_text(app)  # whole at 80x24
        assert (folder / "report.md").read_text() != "# an earlier report\n"

    run_app(app, body)


class SavingSession(RecordedSession):
    """The recorded run, saved by the real finish: its report is rendered from the results it saves."""

    finish = PlanSession.finish


def folder_says(folder: Path) -> tuple[str, str, dict[str, str], str]:
    """What a folder holds: results.json's status, its candidate counts, its packages (folder: label) and report."""
    results = read_results(folder / "results.json")
    packages = {str(p.parent.relative_to(folder)): json.loads(p.read_text())["candidate"]["label"]
                for p in folder.glob("deploy/*/manifest.json")}
    report = (folder / "report.md").read_text() if (folder / "report.md").exists() else ""
    assert packages == {d.folder: d.label for d in results.deployments if d.folder}  # deploy/ is results.json's
    if report:
        assert f"status **{results.status}**" in report and f"finished {results.finished}" in report
        assert f"**Candidates**: {CandidateCounts.of(results).words(noun=False)}" in report
    return str(results.status), CandidateCounts.of(results).words(why=False), packages, report


def test_save_rerun_cancel_and_save_keep_each_run_whole_in_its_own_folder(tmp_path, monkeypatch):
    """Save a run (with its packages), optimize again and cancel, save: the cancelled run goes to a folder of its own,
    which says "interrupted" from the moment it ends; the saved run's results.json, report and deploy/ stay as
    they were; what the screens count is what the folder's report counts."""
    import planner.report.figures

    # Figures take seconds to draw and say nothing about the folder.
    monkeypatch.setattr(planner.report.figures, "draw_figures", lambda *_, **__: ({}, {}))
    session = SavingSession()
    out = tmp_path / "out"
    app = PlannerApp(model="demo:tiny", session=session, out_dir=out)

    async def body(pilot):
        await drive(pilot, "results")
        await pilot.press("9", "s")
        await wait_idle(pilot)
        status, counts, packages, report = folder_says(out)
        assert (status, counts) == ("ok", "8 candidates measured")
        assert list(packages) == ["deploy/winner"] and "`deploy/winner/`" in report
        assert "results.json and deploy/ (1 package)" in str(app.query_one("#report #saved", Label).render())
        kept = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

        session.gate = threading.Event()
        await pilot.press("7", "r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the second run to start")
        await pilot.press("c")
        session.gate.set()
        await wait_idle(pilot)
        again = tmp_path / "out-2"
        assert app.session.out_dir == again
        log = " ".join(" ".join(line.text for line in app.query_one("#optimize").query_one(RichLog).lines).split())
        said = "cancelled: 1 candidate measured, 7 not reached (the run was cancelled first)"
        assert f"{said}; results in {again}" in log
        assert folder_says(again)[:3] == ("interrupted", "1 candidate measured, 7 not reached", {})  # before s
        await pilot.press("8")
        await wait_idle(pilot)
        assert str(app.query_one("#sorted", Label).render()).startswith("1 candidate measured, 7 not reached · ")
        await pilot.press("9")
        await wait_idle(pilot)
        assert app.query_one("#out-dir", Input).value == str(again)
        await pilot.press("s")
        await wait_idle(pilot)
        status, counts, packages, report = folder_says(again)
        assert (status, counts, list(packages)) == ("interrupted", "1 candidate measured, 7 not reached",
                                                     ["deploy/winner"])
        assert "cancelled before 7 candidates were reached" in report
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == kept

        # A complete run after the cancelled one is ok, in a folder of its own too.
        await pilot.press("7", "r")
        await wait_idle(pilot)
        await pilot.press("9", "s")
        await wait_idle(pilot)
        assert folder_says(tmp_path / "out-3")[:2] == ("ok", "8 candidates measured")

    run_app(app, body, size=(100, 30))


def test_another_model_saves_to_a_folder_named_after_it_not_over_the_first(tmp_path, monkeypatch):
    """The folder the app was opened with holds the first model's runs: after loading another model, the Report step
    offers the default folder named after it, and saving there leaves the first model's folder as it was."""
    monkeypatch.chdir(tmp_path)
    first = tmp_path / "first"
    app = PlannerApp(model="demo:tiny", session=TwoModels(), out_dir=first)

    async def body(pilot):
        await drive(pilot, "report")
        assert (first / "report.md").is_file()
        kept = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}
        await pilot.press("2")
        app.query_one("#source", Input).value = "demo:other"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question before discarding")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.session.model is not None and app.session.model.name == "other", 30,
                       "the load")
        await wait_idle(pilot)
        await pilot.press("4", "r")
        await wait_idle(pilot)
        await pilot.press("9")
        await pilot.pause()
        folder = Path(app.query_one("#out-dir", Input).value)
        assert folder.name.endswith("-other-cpu") and folder.parent == Path("reports")
        await pilot.press("s")
        await wait_idle(pilot)
        assert str(app.query_one("#report #saved", Label).render()) == (
            f"Saved {folder / 'report.md'} and results.json")
        assert read_results(folder / "results.json").model.name == "other"
        assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == kept

    run_app(app, body)
