"""Saving from the TUI: no folder appears until the user saves, and saving again says it overwrote."""

from __future__ import annotations

from textual.widgets import Input, Label
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text, wait_idle


def test_opening_and_profiling_create_no_folder_until_saved(tmp_path, monkeypatch):
    """The default reports/<date>-<model>-<target> folder is made by Save, not by start-up or Profile."""
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession())  # no --out: the default folder

    async def body(pilot):
        await drive(pilot, "profile")
        assert app.session.baseline is not None
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        await pilot.press("9", "s")
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


def test_a_run_cancelled_after_an_earlier_save_is_saved_as_interrupted(tmp_path):
    """Save, optimize again and cancel, save: results.json says interrupted (not the first save's ok)."""
    import json
    import threading

    from tui_support import wait_for

    session = RecordedSession()
    out = tmp_path / "out"
    app = PlannerApp(model="demo:tiny", session=session, out_dir=out)

    def status() -> str:
        return json.loads((out / "results.json").read_text())["status"]

    async def body(pilot):
        await drive(pilot, "results")
        await pilot.press("9", "s")
        await wait_idle(pilot)
        assert status() == "ok"
        session.gate = threading.Event()
        await pilot.press("7", "r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the second run to start")
        await pilot.press("c")
        session.gate.set()
        await wait_idle(pilot)
        assert any(w.startswith("cancelled:") for w in session.results.warnings)
        await pilot.press("9", "s")
        await wait_idle(pilot)
        assert status() == "interrupted"
        # A complete run after the cancelled one is ok again.
        await pilot.press("7", "r")
        await wait_idle(pilot)
        await pilot.press("9", "s")
        await wait_idle(pilot)
        assert status() == "ok"

    run_app(app, body)
