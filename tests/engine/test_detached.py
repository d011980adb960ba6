"""The detached engine's run folder and relay (planner.engine.detached), without SSH: what `attach` relies on."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pytest

from planner.engine import detached


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "runs"


def _finished_run(lines: list[dict], *, pid: int | None = None) -> os.PathLike:
    run_dir = detached.new_run_dir()
    (run_dir / detached.MESSAGES).write_text("".join(json.dumps(m, separators=(",", ":")) + "\n" for m in lines))
    (run_dir / detached.PID_FILE).write_text(str(pid if pid is not None else _dead_pid()))
    return run_dir


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


HELLO = {"type": "hello", "protocol": 1}


@pytest.fixture
def client_input():
    """The client's side of the relay's input, held open (an input at its end means the client has gone)."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(read_fd, "rb")
    yield stream
    os.close(write_fd)  # the relay's reading thread sees the end and goes
    time.sleep(0.1)
    stream.close()
EVENTS = [{"type": "event", "id": 1, "event": {"kind": "log", "message": f"line {i}"}} for i in range(3)]


def test_the_relay_replays_from_the_line_asked_and_ends_at_the_goodbye(runs, client_input):
    run_dir = _finished_run([HELLO, *EVENTS, {"type": "bye", "status": "ok"}])
    out = io.BytesIO()
    assert detached.relay(run_dir, since=2, out=out, inp=client_input) == 0
    sent = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sent[0] == HELLO  # the hello always comes first: the client's handshake
    assert [m.get("event", {}).get("message") for m in sent[1:-1]] == ["line 1", "line 2"]
    assert sent[-1]["type"] == "bye"


def test_an_engine_gone_without_a_goodbye_is_said_and_a_reboot_told_apart(runs, capsys, client_input):
    run_dir = _finished_run([HELLO, *EVENTS])
    out = io.BytesIO()
    assert detached.relay(run_dir, since=1, out=out, inp=client_input) == detached.GONE
    assert len(out.getvalue().splitlines()) == 4  # everything it had logged came through first
    assert "ended without a goodbye" in capsys.readouterr().err

    info = json.loads((run_dir / detached.RUN_FILE).read_text())
    (run_dir / detached.RUN_FILE).write_text(json.dumps({**info, "boot_id": "an-earlier-boot"}))
    assert detached.relay(run_dir, since=1, out=io.BytesIO(), inp=client_input) == detached.REBOOTED
    assert "rebooted" in capsys.readouterr().err
    assert detached.list_runs()[0]["rebooted"] is True


def test_a_run_name_cannot_reach_outside_the_runs_folder(runs):
    run_dir = _finished_run([HELLO])
    assert detached.find_run(run_dir.name) == run_dir
    assert detached.find_run("latest") == run_dir
    for name in ("..", "../..", f"../runs/{run_dir.name}", "/etc", ".hidden", ""):
        assert detached.find_run(name) is None


def test_a_detached_engine_outlives_its_relay_and_ends_itself_when_idle(runs, tmp_path):
    env = {**os.environ, "PLANNER_CACHE_DIR": str(tmp_path / "cache"), "PLANNER_ENGINE_IDLE_EXIT_S": "1"}
    relay = subprocess.Popen([sys.executable, "-m", "planner.cli", "engine", "--detach"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, text=True)
    hello = json.loads(relay.stdout.readline())
    relay.stdout.close()
    relay.stdin.close()  # the client goes: the relay ends, the engine does not
    assert relay.wait(timeout=30) == 0
    run_dir = detached.find_run(hello["run"])
    assert run_dir is not None and detached.engine_alive(run_dir)
    deadline = time.monotonic() + 30
    while detached.engine_alive(run_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not detached.engine_alive(run_dir)
    last = json.loads((run_dir / detached.MESSAGES).read_text().splitlines()[-1])
    assert last["type"] == "bye" and last["reason"] == "no client for 1 s"


def test_the_relay_ends_when_its_client_goes_and_the_engine_stays(runs):
    run_dir = _finished_run([HELLO], pid=os.getpid())  # "the engine": this process, alive throughout
    assert detached.relay(run_dir, since=1, out=io.BytesIO(), inp=io.BytesIO()) == 0
    assert detached.engine_alive(run_dir)
