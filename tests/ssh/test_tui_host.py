"""`planner --host`: the TUI here, its engine on a host over SSH (a scripted engine: this is about the connection)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))

from tui_support import PlannerApp, drive, run_app, screen_text, wait_for  # noqa: E402

from planner.cli.remote import tui_connector  # noqa: E402
from planner.tui.screens.engine_stopped import EngineStopped  # noqa: E402

SCRIPTED = f"{sys.executable} {Path(__file__).with_name('scripted_planner.py')}"


def _args(host, model: str) -> argparse.Namespace:
    return argparse.Namespace(host=host.alias, remote_planner=SCRIPTED, accept_new_host_key=False,
                              ssh_config=[str(host.ssh_options.config_paths[0])],
                              known_hosts=str(host.ssh_options.known_hosts), model=model)


def test_the_tui_drives_an_engine_on_the_host_and_says_when_the_connection_drops(make_ssh_host, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The profile lasts long enough that the cut always falls inside it, however slowly a loaded machine kills
    # the host (with 0.5 s the profile sometimes ended first and the cut fell on the decide step).
    host = make_ssh_host("board", planner=SCRIPTED, env={"PLANNER_FAKE_STEP_S": "5"})
    args = _args(host, "demo:tiny")
    connect, label = tui_connector(args)
    app = PlannerApp(model=args.model, connect=connect, host=label)

    async def body(pilot):
        await wait_for(pilot, lambda: app.session.model is not None, 60, "the model loaded on the host")
        assert "on board" in str(app.sub_title)
        assert "planner measures board (over SSH)" in screen_text(app)
        await drive(pilot, "profile")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 20, "the profile started")
        host.kill()  # the network drops mid-profile
        await wait_for(pilot, lambda: isinstance(app.screen, EngineStopped), 60, "the engine-stopped message")
        text = " ".join(str(app.screen.query_one("#engine-stopped-text").render()).split())
        assert "the connection to board was lost while it ran the profile step" in text.lower()
        assert app.is_running

    run_app(app, body)
