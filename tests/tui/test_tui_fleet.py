"""The fleet view (`planner fleet --tui`): hosts with live status from a real fleet process, then the comparison.

The process is tests/tui/fake_fleet.py: it prints `planner fleet --status-lines`'s JSON lines from a script and
writes the real comparison (planner.report.fleet) over the recorded demo:tiny results; SIGINT cancels it as it
cancels the real fleet.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from tui_support import run_app, screen_text, wait_for

from planner.tui import fleet_app
from planner.tui.fleet_app import FleetApp
from planner.tui.screens.confirm import YesNo
from planner.tui.screens.too_small import TooSmallScreen

FAKE_FLEET = Path(__file__).parent / "fake_fleet.py"
HOSTS = [("Raspberry Pi 5", "pi@pi5"), ("x86", "lab")]
REPO_ROOT = Path(__file__).resolve().parents[2]


def fleet(tmp_path: Path, script: list[list]) -> FleetApp:
    """The view over a fake fleet process that plays `script`, its output logged in tmp_path."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return FleetApp([sys.executable, str(FAKE_FLEET), str(path)], HOSTS, log_path=tmp_path / "fleet.log")


def flat(app) -> str:
    """The screen as one line of words (what the user reads, wrapping aside)."""
    return " ".join(screen_text(app).split())


def comparison(app) -> str:
    """The whole comparison as the view draws it (also the part scrolled out of sight), as one line of words."""
    console = Console(file=io.StringIO(), width=78, record=True, color_system=None)
    console.print(app.query_one("#comparison").content)
    return " ".join(console.export_text().split())


def row(app, label: str) -> list[str]:
    """A host's row in the table, cell by cell."""
    table = app.query_one("#hosts")
    return [str(cell).strip() for cell in table.get_row(label)]


def ended(app) -> bool:
    return app.returncode is not None


def test_rows_appear_update_live_and_the_comparison_shows_after_done(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    app = fleet(tmp_path, [
        ["sleep", 1.5],
        ["status", "Raspberry Pi 5", "pi@pi5", "connecting", ""],
        ["status", "x86", "lab", "planning", "timing the baseline: torch eager fp32 (cpu)"],
        ["sleep", 1.5],
        ["status", "Raspberry Pi 5", "pi@pi5", "failed", "could not connect to pi@pi5: connection refused"],
        ["status", "x86", "lab", "fetching", "results.json, report.md, figures"],
        ["status", "x86", "lab", "done", ""],
        ["done", "out"],
    ])

    async def body(pilot):
        assert row(app, "Raspberry Pi 5")[:3] == ["Raspberry Pi 5", "pi@pi5", "waiting"]  # before any line
        await wait_for(pilot, lambda: app.lines["x86"].phase == "planning", 20, "the first statuses")
        text = flat(app)
        assert "Planning" in text and "2 still going" in text
        assert "connecting" in row(app, "Raspberry Pi 5") and "timing the baseline" in " ".join(row(app, "x86"))
        assert "c Cancel all" in text and "q Quit" in text
        assert app.done is None  # live: the comparison is not there yet
        await wait_for(pilot, lambda: app.done is not None, 20, "the done line")
        assert row(app, "x86")[2] == "done" and row(app, "Raspberry Pi 5")[2] == "failed"
        text = flat(app)
        assert "Done (1 done, 1 failed)" in text and "out/fleet/report.md" in text
        assert "Cancel all" not in text  # nothing left to cancel
        shown = comparison(app)
        assert "Fleet comparison: tiny" in shown and "Run it on x86" in shown
        assert "could not connect to pi@pi5: connection refused" in shown
        assert "out/x86/report.md" in shown and "](" not in shown  # links become paths the user can open
        await wait_for(pilot, lambda: ended(app), 20, "the fleet process's end")
        await pilot.press("q")  # nothing runs: no question
        await pilot.pause()
        assert not isinstance(app.screen, YesNo)

    run_app(app, body)
    assert app.return_value == 0


def test_cancel_sends_sigint_once_and_the_view_shows_what_was_cancelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANNER_FAKE_FLEET_FETCH_S", "2")  # time to see the cancel under way
    signals: list[int] = []
    real_kill = os.kill

    def kill(pid, sig):
        signals.append(sig)
        real_kill(pid, sig)

    monkeypatch.setattr(fleet_app.os, "kill", kill)
    app = fleet(tmp_path, [
        ["status", "Raspberry Pi 5", "pi@pi5", "planning", "measuring onnxruntime int8 dynamic (cpu, 2t)"],
        ["status", "x86", "lab", "done", ""],
        ["wait_cancel", 60],
        ["status", "Raspberry Pi 5", "pi@pi5", "done", ""],  # only without a cancel
        ["done", "out"],
    ])

    async def body(pilot):
        await wait_for(pilot, lambda: app.lines["x86"].phase == "done", 20, "the first statuses")
        await pilot.press("c")
        await wait_for(pilot, lambda: app.lines["Raspberry Pi 5"].phase == "fetching", 10, "the cancel's fetch")
        assert "cancelling: fetching what each host measured" in flat(app)
        assert app.check_action("cancel", ()) is False and "Cancel all" not in flat(app)
        await pilot.press("c")  # a second c sends nothing more
        await wait_for(pilot, lambda: app.done is not None, 20, "the done line after the cancel")
        assert row(app, "Raspberry Pi 5")[2] == "cancelled" and row(app, "x86")[2] == "done"
        text = flat(app)
        assert "Cancelled (1 done, 1 cancelled)" in text and "holds what each host measured" in text
        shown = comparison(app)
        assert "2 with a measured best candidate" in shown  # the cancelled host kept what it measured
        assert "Raspberry Pi 5 (pi@pi5): Status stopped: cancelled" in shown
        await wait_for(pilot, lambda: ended(app), 20, "the fleet process's end")
        assert app.returncode == 130
        await pilot.press("q")

    run_app(app, body)
    assert signals == [signal.SIGINT]
    assert app.return_value == 130


def test_a_fleet_process_that_dies_shows_its_status_and_last_lines_and_keeps_the_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = fleet(tmp_path, [
        ["status", "x86", "lab", "planning", "timing the baseline"],
        ["stderr", "Traceback (most recent call last):"],
        ["stderr", "RuntimeError: the fleet broke"],
        ["exit", 3],
    ])

    async def body(pilot):
        await wait_for(pilot, lambda: ended(app), 20, "the fleet process's end")
        text = flat(app)
        assert "The fleet process stopped (exit status 3) before it wrote the comparison" in text
        assert "RuntimeError: the fleet broke" in text and "Traceback" in text
        assert str(tmp_path / "fleet.log") in "".join(screen_text(app).split())  # where all of it is (may wrap)
        assert row(app, "x86")[2] == "planning" and row(app, "Raspberry Pi 5")[2] == "waiting"
        assert "Cancel all" not in text
        await pilot.press("q")  # nothing runs any more: it closes without asking

    run_app(app, body)
    assert app.return_value == 1


def test_a_fleet_process_that_cannot_start_is_said_plainly(tmp_path):
    app = FleetApp(["/nonexistent/no-such-python", "-m", "planner.cli", "fleet"], HOSTS,  # a short path: the line fits
                   log_path=tmp_path / "fleet.log")

    async def body(pilot):
        await pilot.pause()
        text = flat(app)
        assert "The fleet process could not start (No such file or directory" in text and "no-such-python" in text
        assert row(app, "x86")[2] == "waiting" and "Cancel all" not in text
        await pilot.press("q")

    run_app(app, body)
    assert app.return_value == 1


def test_a_status_for_a_host_not_in_the_fleet_file_gets_a_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = fleet(tmp_path, [
        ["stdout", "a line that is not a status"],
        ["status", "spare board", "root@10.0.0.9", "connecting", ""],
        ["status", "spare board", "root@10.0.0.9", "failed", "could not connect: no route to host"],
        ["status", "x86", "lab", "failed", "no planner on lab"],
        ["status", "Raspberry Pi 5", "pi@pi5", "failed", "host key changed"],
        ["done", "out"],
    ])

    async def body(pilot):
        await wait_for(pilot, lambda: app.done is not None and ended(app), 20, "the done line")
        assert row(app, "spare board")[:3] == ["spare board", "root@10.0.0.9", "failed"]
        assert list(app.lines) == ["Raspberry Pi 5", "x86", "spare board"]  # the fleet file's order, then new ones
        assert "spare board" in flat(app)
        await pilot.press("q")

    run_app(app, body)
    assert app.return_value == 1  # every host failed
    assert "stdout: a line that is not a status" in (tmp_path / "fleet.log").read_text()


def test_quit_while_planning_asks_then_cancels_and_waits_for_the_comparison(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANNER_FAKE_FLEET_FETCH_S", "2")  # time to see the quit under way
    app = fleet(tmp_path, [
        ["status", "x86", "lab", "planning", "timing the baseline"],
        ["wait_cancel", 60],
        ["done", "out"],
    ])

    async def body(pilot):
        await wait_for(pilot, lambda: app.lines["x86"].phase == "planning", 20, "the first status")
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, YesNo), 5, "the question")
        assert "The fleet is still planning on 2 hosts" in flat(app)
        await pilot.press("n")  # stay
        await pilot.pause()
        assert app.running and not app.cancel_sent
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, YesNo), 5, "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.lines["x86"].phase == "fetching", 10, "the cancel's fetch")
        assert "quitting: cancelling every host's plan" in flat(app) and app.is_running
        await wait_for(pilot, lambda: not app.is_running, 20, "the view to close")

    run_app(app, body)
    assert app.return_value == 130
    assert app.done is not None and app.done.interrupted  # it closed once the fleet had written the comparison
    assert (tmp_path / "out" / "fleet" / "report.md").is_file()


def test_quitting_stops_a_fleet_that_does_not_end_when_cancelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANNER_FAKE_FLEET_DEAF", "1")  # it ignores SIGINT
    monkeypatch.setattr(fleet_app, "QUIT_WAIT_S", 1.0)
    monkeypatch.setattr(fleet_app, "STOP_GRACE_S", 2.0)
    app = fleet(tmp_path, [["status", "x86", "lab", "fetching", ""], ["wait_cancel", 60]])

    async def body(pilot):
        await wait_for(pilot, lambda: app.lines["x86"].phase == "fetching", 20, "the first status")
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, YesNo), 5, "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, 10, "the view to close after the wait")

    started = time.monotonic()
    run_app(app, body)
    assert app.return_value == 130
    deadline = time.monotonic() + 10
    while app.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert app.process.returncode == -signal.SIGTERM  # stopped, not left running behind the closed view
    assert time.monotonic() - started < 30


def test_below_80x24_the_too_small_message_covers_it_and_q_twice_cancels_and_quits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = fleet(tmp_path, [["status", "x86", "lab", "planning", "timing the baseline"], ["wait_cancel", 60],
                           ["done", "out"]])

    async def body(pilot):
        await wait_for(pilot, lambda: app.lines["x86"].phase == "planning", 20, "the first status")
        assert isinstance(app.screen, TooSmallScreen)
        assert "enlarge to at least 80×24 (now 70×20)" in flat(app)
        await pilot.press("c")  # behind the message only q works
        assert not app.cancel_sent
        await pilot.press("q")
        await pilot.pause()
        assert "is in progress" in flat(app) and "Press q again to stop it and quit" in flat(app)
        assert not app.cancel_sent
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 20, "the view to close")

    run_app(app, body, size=(70, 20))
    assert app.cancel_sent and app.return_value == 130


def test_growing_the_terminal_to_80x24_shows_the_view(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = fleet(tmp_path, [["status", "x86", "lab", "done", ""], ["done", "out"]])

    async def body(pilot):
        await wait_for(pilot, lambda: app.done is not None, 20, "the done line")
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not isinstance(app.screen, TooSmallScreen)
        text = flat(app)
        assert "Done (" in text and "Comparison" in text
        await pilot.press("q")

    run_app(app, body, size=(60, 16))


def test_the_fleet_view_loads_nothing_that_plans():
    code = ("import sys, planner.tui.fleet_app\n"
            "print('LOADED', sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'torchvision', 'onnx', "
            "'onnxruntime', 'openvino', 'nncf', 'tensorrt', 'asyncssh'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "LOADED []" in out.stdout
