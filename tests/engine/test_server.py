"""`planner engine` (planner/engine/server.py) with bad input and noisy code: it answers with an error and goes
on, and nothing printed by a model's code reaches the protocol's stream."""

from __future__ import annotations

import os
import signal

import pytest
from engine_support import Background, heard_bye, spawn

from planner.engine.client import EngineDiedError
from planner.engine.protocol import COMMANDS, STEPS
from planner.errors import PlannerError
from planner.results import RESULTS_NAME, read_results


def _send_line(engine, line: str) -> None:
    engine.writer.write(line + "\n")
    engine.writer.flush()


def test_lines_that_are_not_commands_get_an_error_and_the_engine_goes_on(engine):
    for line in ("this is not json", "[1, 2]", '{"id": 3}', '{"type": "run", "id": "seven", "step": "detect"}'):
        _send_line(engine, line)
    # A command answered after those lines shows each was read (and answered) before it.
    assert engine.request({"type": "run", "step": "target", "args": {"target": "cpu"}})["value"] == "cpu"
    errors = engine.messages("error", 0)  # a line without a usable id is answered as command 0
    assert [e["problem"].split(" (")[0].split(":")[0] for e in errors] == [
        "not JSON", "not a message", "not a message", "the command's id must be a number, not 'seven'"]
    assert all(e["fix"] and e["kind"] == "ProtocolError" and "done" in e["state"] for e in errors)
    assert engine.alive and engine.stray == []


@pytest.mark.parametrize(("message", "problem", "fix_names"), [
    ({"type": "frobnicate"}, "unknown command 'frobnicate'", COMMANDS),
    ({"type": "run", "step": "nonsense"}, "unknown step 'nonsense'", STEPS),
    ({"type": "run", "step": "target", "args": ["cpu"]}, "the arguments of 'target' must be an object", ()),
])
def test_an_unknown_command_or_step_is_an_error_that_says_what_is_known(engine, message, problem, fix_names):
    with pytest.raises(PlannerError) as exc:
        engine.request(message)
    assert exc.value.problem == problem
    assert all(name in exc.value.fix for name in fix_names)
    # The engine keeps answering.
    assert engine.request({"type": "run", "step": "target", "args": {"target": "cpu"}})["value"] == "cpu"
    assert engine.alive


def test_a_step_given_an_unknown_argument_fails_as_that_step(engine):
    with pytest.raises(PlannerError) as exc:
        engine.request({"type": "run", "step": "target", "args": {"target": "cpu", "colour": "blue"}})
    assert exc.value.problem.startswith("target failed: TypeError") and "colour" in exc.value.problem
    assert "engine's log" in exc.value.fix
    assert engine.request({"type": "run", "step": "detect"})["type"] == "result"


NOISY_MODEL = '''
import os

import torch


def make():
    print("noise")
    os.write(1, b"more noise\\n")
    return torch.nn.Sequential(torch.nn.Linear(4, 2))


INPUT_SHAPE = (1, 4)
'''


def test_a_model_that_prints_does_not_corrupt_the_stream(tmp_path):
    model = tmp_path / "noisy.py"
    model.write_text(NOISY_MODEL)
    engine = spawn(tmp_path)
    try:
        opened = engine.request({"type": "open", "model": f"{model}:make", "trust_code": True, "target": "cpu"})
        assert opened["value"]["name"] == "noisy-make" and "model" in opened["state"]["done"]
        # And again through `run load`: the stream still carries only messages.
        loaded = engine.request({"type": "run", "step": "load",
                                 "args": {"source": f"{model}:make", "trust_code": True}})
        assert loaded["value"]["parameters"] == 10
    finally:
        engine.close()
    assert engine.stray == []
    assert engine.bye is not None and engine.process.returncode == 0
    lines = (tmp_path / "engine.log").read_text().splitlines()
    assert lines.count("noise") == 2 and lines.count("more noise") == 2  # print and a raw write to fd 1, each load


def test_a_model_file_without_trust_code_is_refused_with_how_to_allow_it(engine, tmp_path):
    model = tmp_path / "noisy.py"
    model.write_text(NOISY_MODEL)
    with pytest.raises(PlannerError) as exc:
        engine.request({"type": "open", "model": f"{model}:make", "target": "cpu"})
    assert "trust" in (exc.value.problem + exc.value.fix).lower()
    assert "model" not in exc.value.state["done"] and engine.alive


@pytest.mark.parametrize("how", ["SIGTERM", "end of input"])
def test_a_hang_up_between_steps_writes_results_and_says_bye(tmp_path, how):
    out = tmp_path / "out"
    engine = spawn(tmp_path)
    try:
        engine.request({"type": "open", "model": "demo:tiny", "target": "cpu", "out": str(out)})
        if how == "SIGTERM":
            os.kill(engine.process.pid, signal.SIGTERM)
        else:
            engine.writer.close()  # the client went away without a shutdown
        assert engine.process.wait(timeout=60) == 0
        heard_bye(engine)
    finally:
        engine.close()
    reason = "the engine received SIGTERM" if how == "SIGTERM" else "the client closed the connection"
    assert engine.bye is not None and engine.bye["reason"] == reason and engine.deaths == []
    assert read_results(out / RESULTS_NAME).status == engine.bye["status"] == "interrupted"


SLOW_MODEL = '''
import time

import torch


def make():
    time.sleep(120)  # a model that takes minutes to build, and reads no cancel flag
    return torch.nn.Linear(4, 2)


INPUT_SHAPE = (1, 4)
'''


def test_a_hang_up_during_a_step_that_will_not_stop_answers_for_it_and_exits(tmp_path):
    model = tmp_path / "slow.py"
    model.write_text(SLOW_MODEL)
    engine = spawn(tmp_path)
    try:
        engine.request({"type": "run", "step": "out_dir", "args": {"out": str(tmp_path / "out")}})
        load = Background(engine, {"type": "run", "step": "load", "args": {"source": f"{model}:make",
                                                                            "trust_code": True}})
        assert engine.request({"type": "run", "step": "detect"})["state"]["running"] == "load"
        os.kill(engine.process.pid, signal.SIGHUP)
        assert engine.process.wait(timeout=60) == 0  # it leaves the step behind rather than wait minutes for it
        load.join(10)
    finally:
        engine.close()
    assert isinstance(load.error, PlannerError) and not isinstance(load.error, EngineDiedError)
    assert load.error.problem == "load was stopped before it finished: the engine received SIGHUP"
    assert load.error.fix == "start the engine again and run load again"
    assert engine.bye is not None and engine.bye["status"] == "interrupted" and engine.deaths == []
    assert read_results(tmp_path / "out" / RESULTS_NAME).status == "interrupted"
