"""The TUI outlives its engine: a crash mid-step says which step ran and what was kept, and r restarts it."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from tui_support import PlannerApp, drive, run_app, screen_text, wait_for

from planner.engine import remote
from planner.engine.client import EngineClient
from planner.results import read_results
from planner.tui.screens.engine_stopped import EngineStopped

FAKE_ENGINE = [sys.executable, str(Path(__file__).parent / "fake_engine.py")]


def _spawn(log: Path):
    return lambda on_death: EngineClient.spawn(command=FAKE_ENGINE, log_path=log, on_death=on_death)


# SIGKILL here; tests/engine/test_crash.py also kills the engine with SIGSEGV: the client reports any signal alike.
@pytest.mark.parametrize("sig", [signal.SIGKILL], ids=["SIGKILL"])
def test_an_engine_killed_mid_optimize_leaves_the_tui_running_with_what_was_kept(sig, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANNER_FAKE_STEP_S", "0.4")
    app = PlannerApp(model="demo:tiny", connect=_spawn(tmp_path / "engine.log"), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "optimize")
        await pilot.press("r")
        session = app.session
        await wait_for(pilot, lambda: (session.out_dir / "results.json").exists(), 30, "the first candidate saved")
        os.kill(session.client.process.pid, sig)
        await wait_for(pilot, lambda: isinstance(app.screen, EngineStopped), 30, "the engine-stopped message")
        await pilot.pause()
        text = " ".join(str(app.screen.query_one("#engine-stopped-text").render()).split())
        text += " " + " ".join(screen_text(app).replace("█", " ").split())
        assert f"killed by {sig.name}" in text and "while it ran the optimize step" in text and "(Optimizing)" in text
        assert "Kept in" in text and "results.json" in text
        kept = read_results(session.out_dir / "results.json")
        assert kept.baseline is not None and len(kept.candidates) >= 2  # the baseline and a measured candidate
        assert app.is_running and app.job is None
        await pilot.press("r")  # restart: a fresh engine, the model loaded again
        await wait_for(pilot, lambda: app.session.model is not None, 60, "the model loaded by the new engine")
        assert app.session.client.alive and app.session.client.process.pid != session.client.process.pid

    run_app(app, body)


def test_a_profile_that_does_not_stop_when_cancelled_ends_its_engine(tmp_path, monkeypatch):
    """`c` asks the engine to stop now; an engine still busy a few seconds later is stuck, and is ended."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANNER_FAKE_STEP_S", "60")  # the recorded profile sleeps through the cancel
    monkeypatch.setattr(remote, "CANCEL_GRACE_S", 1.0)  # a few seconds in use; one is as good a test
    app = PlannerApp(model="demo:tiny", connect=_spawn(tmp_path / "engine.log"), out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: app.session.model is not None, 60, "the start-up load")
        await pilot.press("4", "r")
        await wait_for(pilot, lambda: app.job is not None and app.job.name == "profile", 10, "the profile")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, EngineStopped), 20, "the stuck engine ended")
        text = " ".join(str(app.screen.query_one("#engine-stopped-text").render()).split())
        assert "killed by SIGKILL" in text and "profile step" in text
        assert app.job is None and app.is_running

    run_app(app, body)
