"""`planner engine` (planner/engine/server.py) with bad input and noisy code: it answers with an error and goes
on, and nothing printed by a model's code reaches the protocol's stream."""

from __future__ import annotations

import os
import signal

import pytest
from engine_support import Background, heard_bye, spawn

from planner.engine import protocol as wire
from planner.engine.client import EngineDiedError
from planner.engine.protocol import COMMANDS
from planner.errors import PlannerError
from planner.results import RESULTS_NAME, read_results


def _send_line(engine, line: str) -> None:
    engine.writer.write(line + "\n")
    engine.writer.flush()


def test_lines_that_are_not_commands_get_an_error_and_the_engine_goes_on(engine):
    for line in ("this is not json", "[1, 2]", '{"id": 3}', '{"type": "detect", "id": "seven"}'):
        _send_line(engine, line)
    # A command answered after those lines shows each was read (and answered) before it.
    assert engine.request(wire.SetTarget(target="cpu")) == "cpu"
    errors = engine.messages("error", 0)  # a line without a usable id is answered as command 0
    assert [e.problem.split(" (")[0].split(":")[0] for e in errors] == [
        "not JSON", "not a message", "not a message", "a 'detect' message that does not fit its type"]
    assert "$.id" in errors[-1].problem  # what does not fit, by where it is in the line
    assert all(e.fix and e.kind == "ProtocolError" and e.state is not None for e in errors)
    assert engine.alive and engine.stray == []


@pytest.mark.parametrize(("line", "problem", "fix_names"), [
    ('{"type": "frobnicate", "id": 41}', "unknown command 'frobnicate'", COMMANDS),
    ('{"type": "target", "id": 41, "target": ["cpu"]}', "a 'target' message that does not fit its type", ()),
    ('{"type": "load", "id": 41}', "a 'load' message that does not fit its type", ()),
])
def test_an_unknown_or_misshapen_command_is_an_error_that_says_what_is_known(engine, line, problem, fix_names):
    _send_line(engine, line)
    assert engine.request(wire.SetTarget(target="cpu")) == "cpu"  # the engine keeps answering
    [error] = engine.messages("error", 41)  # answered as the command the line named
    assert error.problem.startswith(problem)
    assert all(name in error.fix for name in fix_names)
    assert engine.alive


def test_an_argument_the_command_does_not_have_is_ignored(engine):
    # A newer client's extra field reaches an older engine of the same protocol: the command still runs.
    _send_line(engine, '{"type": "target", "id": 41, "target": "cpu", "colour": "blue"}')
    assert engine.request(wire.Detect())["cpu"]["logical_cores"] >= 1
    assert [m.value for m in engine.messages("result", 41)] == ["cpu"]


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
        opened = engine.ask(wire.Open(model=f"{model}:make", trust_code=True, target="cpu"))
        assert opened.value["name"] == "noisy-make" and "model" in opened.state.done
        # And again through `load`: the stream still carries only messages.
        loaded = engine.request(wire.Load(source=f"{model}:make", trust_code=True))
        assert loaded["parameters"] == 10
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
        engine.request(wire.Open(model=f"{model}:make", target="cpu"))
    assert "trust" in (exc.value.problem + exc.value.fix).lower()
    assert "model" not in engine.state.done and engine.alive


@pytest.mark.parametrize("how", ["SIGTERM", "end of input"])
def test_a_hang_up_between_steps_writes_results_and_says_bye(tmp_path, how):
    out = tmp_path / "out"
    engine = spawn(tmp_path)
    try:
        engine.request(wire.Open(model="demo:tiny", target="cpu", out=str(out)))
        if how == "SIGTERM":
            os.kill(engine.process.pid, signal.SIGTERM)
        else:
            engine.writer.close()  # the client went away without a shutdown
        assert engine.process.wait(timeout=60) == 0
        heard_bye(engine)
    finally:
        engine.close()
    reason = "the engine received SIGTERM" if how == "SIGTERM" else "the client closed the connection"
    assert engine.bye is not None and engine.bye.reason == reason and engine.deaths == []
    assert read_results(out / RESULTS_NAME).status == engine.bye.status == "interrupted"


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
        engine.request(wire.SetOutDir(out=str(tmp_path / "out")))
        load = Background(engine, wire.Load(source=f"{model}:make", trust_code=True))
        assert engine.ask(wire.Detect()).state.running == "load"
        os.kill(engine.process.pid, signal.SIGHUP)
        assert engine.process.wait(timeout=60) == 0  # it leaves the step behind rather than wait minutes for it
        load.join(10)
    finally:
        engine.close()
    assert isinstance(load.error, PlannerError) and not isinstance(load.error, EngineDiedError)
    assert load.error.problem == "load was stopped before it finished: the engine received SIGHUP"
    assert load.error.fix == "start the engine again and run load again"
    assert engine.bye is not None and engine.bye.status == "interrupted" and engine.deaths == []
    assert read_results(tmp_path / "out" / RESULTS_NAME).status == "interrupted"


FORKING_MODEL = '''
import multiprocessing
import sys

import torch


def make():
    # As OpenVINO's telemetry does on every event: a forked multiprocessing.Process, joined with a timeout.
    child = multiprocessing.get_context("fork").Process(target=sys.exit, args=(0,))
    child.start()
    child.join(20)
    with open({record!r}, "w") as f:
        f.write("hung" if child.is_alive() else f"exited {{child.exitcode}}")
    if child.is_alive():
        child.kill()
    return torch.nn.Linear(4, 2)


INPUT_SHAPE = (1, 4)
'''


def test_a_process_forked_during_a_step_starts_and_ends(tmp_path):
    # The engine's reading thread waits for the next command while the step runs; a forked child that closes its
    # stdin (multiprocessing does, as it starts) must not inherit that reader's lock held and hang forever.
    record = tmp_path / "child.txt"
    model = tmp_path / "forking.py"
    model.write_text(FORKING_MODEL.format(record=str(record)))
    engine = spawn(tmp_path)
    try:
        engine.request(wire.Load(source=f"{model}:make", trust_code=True))
    finally:
        engine.close()
    assert record.read_text() == "exited 0"


def test_a_load_checks_its_validation_data_and_output_kind_and_keeps_them(engine, tmp_path):
    assert engine.request(wire.Load(source="demo:tiny"))["name"] == "tiny"
    with pytest.raises(PlannerError) as missing:
        engine.request(wire.Load(source="demo:tiny", val_data=str(tmp_path / "no-such")))
    assert missing.value.problem == f"--val-data {tmp_path / 'no-such'} does not exist"
    assert "folder" in missing.value.fix
    with pytest.raises(PlannerError) as dense:  # demo:tiny's output is class scores (1x10): no map per pixel
        engine.request(wire.Load(source="demo:tiny", output_kinds=["0=dense"]))
    assert "a dense output is" in dense.value.problem and "use classes or regression" in dense.value.fix
    assert engine.state.val_data is None and engine.state.output_kinds == ()  # the model loaded first, as it was

    folder = tmp_path / "val"
    folder.mkdir()
    engine.request(wire.Load(source="demo:tiny", val_data=str(folder), val_preset="unit",
                             output_kinds=["output=regression"]))
    state = engine.state
    assert (state.val_data, state.val_preset, state.output_kinds) == (str(folder), "unit", ("output=regression",))
    engine.request(wire.Load(source="demo:tiny"))  # loaded again without them: none
    assert (engine.state.val_data, engine.state.val_preset, engine.state.output_kinds) == (None, None, ())
