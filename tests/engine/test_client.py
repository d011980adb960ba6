"""Starting the engine (planner/engine/client.py): an engine that is missing, broken, silent or of another
protocol version is an EngineError that says what happened and what to do."""

from __future__ import annotations

import shlex
import sys
import time

import psutil
import pytest

from planner.engine import client as client_module
from planner.engine.client import ENGINE_COMMAND_ENV, EngineClient, EngineError
from planner.engine.protocol import PROTOCOL_VERSION


def _fake_engine(tmp_path, monkeypatch, code: str) -> None:
    """Point PLANNER_ENGINE_COMMAND at a small Python script standing in for `planner engine`."""
    script = tmp_path / "fake_engine.py"
    script.write_text(code)
    monkeypatch.setenv(ENGINE_COMMAND_ENV, shlex.join([sys.executable, str(script)]))


def test_another_protocol_version_is_refused_naming_both(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch, """
import json, os, sys
print(json.dumps({"type": "hello", "protocol": 99, "planner": "9.9.9", "pid": os.getpid(), "hardware": None}),
      flush=True)
sys.stdin.read()  # a real engine would wait for commands
""")
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn(log_path=tmp_path / "engine.log")
    problem = exc.value.problem
    assert "protocol version 99 (planner 9.9.9)" in problem
    assert f"this client speaks version {PROTOCOL_VERSION}" in problem
    assert "same planner version" in exc.value.fix


def test_a_missing_engine_says_how_to_reinstall(monkeypatch):
    monkeypatch.setenv(ENGINE_COMMAND_ENV, "/nonexistent/planner-engine --serve")
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn()
    assert "could not start (/nonexistent/planner-engine --serve)" in exc.value.problem
    assert "reinstall the planner" in exc.value.fix and "pip install -e ." in exc.value.fix


def test_an_engine_that_exits_at_once_names_its_status_and_log(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch, "import sys\nsys.exit(3)\n")
    log = tmp_path / "engine.log"
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn(log_path=log)
    assert "exited with status 3 before it said hello" in exc.value.problem
    assert str(log) in exc.value.problem
    assert "reinstall the planner" in exc.value.fix


def test_a_broken_install_leaves_its_traceback_in_the_log(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch, "import planner_module_that_is_not_installed\n")
    log = tmp_path / "engine.log"
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn(log_path=log)
    assert "exited with status 1 before it said hello" in exc.value.problem
    assert "reinstall the planner" in exc.value.fix
    assert "ModuleNotFoundError: No module named 'planner_module_that_is_not_installed'" in log.read_text()


def test_an_engine_that_prints_something_else_first_is_refused(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch, "import sys\nprint('Welcome to the planner!', flush=True)\nsys.stdin.read()\n")
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn()
    assert "did not start the protocol" in exc.value.problem and "Welcome to the planner!" in exc.value.problem
    assert "reinstall the planner" in exc.value.fix


def test_an_engine_that_never_says_hello_is_ended(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch, "import time\ntime.sleep(120)\n")
    monkeypatch.setattr(client_module, "HELLO_TIMEOUT_S", 1.0)
    before = {p.pid for p in psutil.Process().children()}
    started = time.monotonic()
    with pytest.raises(EngineError) as exc:
        EngineClient.spawn()
    assert time.monotonic() - started < 10
    assert "did not say hello within 1 s" in exc.value.problem
    assert "reinstall the planner" in exc.value.fix
    # The silent engine was stopped, not left running.
    left = [p for p in psutil.Process().children() if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []
