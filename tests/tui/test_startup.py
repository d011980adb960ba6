"""Start-up: garbage collection waits from the launch until the first model has loaded, and the
planner stays usable meanwhile (keys still work while the model loads)."""

from __future__ import annotations

import gc
import threading

import pytest
from tui_support import PlannerApp, RecordedSession, run_app, wait_for, wait_idle

from planner.cli.main import main
from planner.errors import PlannerError
from planner.tui import startup


@pytest.fixture(autouse=True)
def gc_as_before():
    """Each test starts with collection on and leaves it as it found it."""
    was_enabled = gc.isenabled()
    startup.resume_gc()
    gc.enable()
    yield
    startup.resume_gc()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


class SlowLoadSession(RecordedSession):
    """The recorded session, whose model load waits until the test lets it finish."""

    def __init__(self) -> None:
        super().__init__()
        self.loading = threading.Event()
        self.release = threading.Event()

    def load(self, source, **kwargs):
        self.loading.set()
        assert self.release.wait(30), "the test never let the load finish"
        return super().load(source, **kwargs)


class NoHardwareSession(RecordedSession):
    """The recorded session on a machine whose detection fails."""

    def detect(self):
        raise PlannerError("cannot read this machine's hardware", "run planner detect --json to see why")


def test_pause_and_resume_leave_a_collector_the_user_turned_off_alone():
    startup.pause_gc()
    assert not gc.isenabled() and startup.gc_paused()
    startup.resume_gc()
    startup.resume_gc()  # a second call changes nothing
    assert gc.isenabled() and not startup.gc_paused()

    gc.disable()  # someone else's choice: not the start-up's to undo
    startup.pause_gc()
    startup.resume_gc()
    assert not gc.isenabled()


def test_collection_resumes_once_the_first_model_has_loaded_and_keys_work_meanwhile(tmp_path):
    session = SlowLoadSession()
    startup.pause_gc()
    app = PlannerApp(session=session, model=session.fixture["model"]["source"], out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, session.loading.is_set, what="the start-up load")
        await pilot.press("3")  # a key pressed while the model loads is handled at once
        await wait_for(pilot, lambda: app.current == "requirements", what="step 3 on screen")
        assert app.job is not None and app.job.name == "load"
        assert not gc.isenabled(), "collection waits while the start-up loads the model"
        session.release.set()
        await wait_for(pilot, lambda: session.model is not None, what="the model")
        await wait_idle(pilot)
        assert gc.isenabled() and not startup.gc_paused()

    run_app(app, body)


@pytest.mark.parametrize(("session_cls", "model", "autostart", "settle"), [
    pytest.param(NoHardwareSession, "demo:tiny", True, "idle", id="detection-fails"),
    # Without a start-up load collection is on again at once: checked after a single pause.
    pytest.param(RecordedSession, None, False, "at-once", id="no-start-up-load"),
])
def test_collection_resumes_when_nothing_loads(session_cls, model, autostart, settle, tmp_path):
    session = session_cls()
    startup.pause_gc()
    app = PlannerApp(session=session, model=model, out_dir=tmp_path / "out", autostart=autostart)

    async def body(pilot):
        if settle == "idle":
            await wait_idle(pilot)
        else:
            await pilot.pause()
        assert session.model is None
        assert gc.isenabled()

    run_app(app, body)


def test_planner_without_a_terminal_leaves_collection_on(capsys):
    assert main([]) == 2  # pytest's stdin is no terminal: the TUI explains the headless commands
    assert "no interactive terminal" in capsys.readouterr().err
    assert gc.isenabled() and not startup.gc_paused()
