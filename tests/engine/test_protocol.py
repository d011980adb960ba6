"""Every command and message of the engine protocol, through a real `planner engine` process.

The client sends open, one command per step, cancel and shutdown; the engine answers with hello, event, result,
error and bye. Each event and answer carries its command's id, and each answer the session's state, whose
changes build the results a client mirrors.
"""

from __future__ import annotations

import json

import pytest
from engine_support import WAIT_S, Background, RecordingClient, heard_bye

from planner import __version__
from planner.codec import from_data
from planner.engine import protocol as wire
from planner.engine.protocol import COMMANDS, MESSAGES, PROTOCOL_VERSION
from planner.errors import PlannerError
from planner.hardware import HardwareProfile
from planner.results import RESULTS_NAME, read_results, results_from_data


def _open(engine: RecordingClient, out, **settings) -> wire.Result:
    return engine.ask(wire.Open(model="demo:tiny", target="cpu", out=str(out), **settings))


def test_the_protocol_names_what_the_tests_cover():
    # If a command or message is added, the tests below must learn it too (llm_plan's are in test_llm_engine.py).
    assert COMMANDS == ("open", "detect", "energy", "ceilings", "demos", "catalog", "load", "target", "requirements",
                        "out_dir", "profile", "decide", "plugins", "optimize", "deploy", "verify", "finish", "save",
                        "plan", "llm_plan", "cancel", "shutdown")
    assert MESSAGES == ("hello", "event", "result", "error", "bye")
    at_once = {kind.__struct_config__.tag for kind in wire.ClientMessage.__args__
               if issubclass(kind, wire.Command) and kind.at_once}
    assert at_once == {"detect", "energy", "demos", "catalog", "target", "requirements", "out_dir", "decide",
                       "plugins", "save"}


def test_a_command_line_round_trips_through_its_type():
    line = wire.encode(wire.Profile(id=7, quick=True, val_data="faces/"))
    assert json.loads(line) == {"type": "profile", "id": 7, "quick": True, "val_data": "faces/"}
    assert wire.decode_command(line) == wire.Profile(id=7, quick=True, val_data="faces/")
    with pytest.raises(wire.ProtocolError) as missing:
        wire.decode_command('{"type": "load", "id": 4}')
    assert missing.value.command_id == 4 and "source" in str(missing.value)


def test_a_load_carries_the_validation_data_and_output_kind_and_the_state_says_them_back():
    load = wire.Load(id=3, source="demo:tiny", val_data="faces/", val_preset="unit", output_kinds=["0=dense"])
    line = wire.encode(load)
    assert json.loads(line) == {"type": "load", "id": 3, "source": "demo:tiny", "val_data": "faces/",
                                "val_preset": "unit", "output_kinds": ["0=dense"]}
    assert wire.decode_command(line) == load
    opened = wire.Open(id=1, model="demo:tiny", val_data="faces/", output_kinds=["0=dense"])
    assert wire.decode_command(wire.encode(opened)) == opened
    answer = wire.Result(id=3, state=wire.State(seq=2, val_data="faces/", val_preset="unit", output_kinds=("0=dense",)))
    assert wire.decode_message(wire.encode(answer)) == answer


def test_hello_then_shutdown_says_bye_and_exits_0(engine):
    hello = engine.hello
    assert hello.protocol == PROTOCOL_VERSION
    assert hello.planner == __version__
    assert hello.pid == engine.process.pid
    hardware = from_data(hello.hardware, HardwareProfile)  # the detected profile, as results.json holds it
    assert hardware.cpu.logical_cores >= 1 and hardware.device_class

    engine.send(wire.Shutdown())
    assert engine.process.wait(timeout=30) == 0
    heard_bye(engine)
    assert engine.bye is not None and engine.bye.status == "ok" and engine.bye.reason == "the client asked"
    assert engine.bye.out_dir is None  # nothing was opened
    assert not engine.alive and engine.death is None


def test_open_and_the_quick_steps_answer_with_the_session_state(engine, tmp_path):
    out = tmp_path / "out"
    opened = _open(engine, out, requirements={"latency_ms": 5})
    assert opened.value["name"] == "tiny" and opened.value["source"] == "demo:tiny"
    state = opened.state
    assert {"model", "target", "requirements"} <= set(state.done)
    assert "profile" not in state.done and state.stale == ()
    assert state.out_dir == str(out) and state.running == ""
    assert engine.results["model"]["name"] == "tiny" and engine.results["target"] == "cpu"
    assert engine.results["requirements"]["latency_ms"] == 5
    # The first state carries every field of the results; later ones only what changed.
    assert {"model", "target", "requirements", "hardware"} <= set(state.changed)

    assert engine.request(wire.Detect())["cpu"]["logical_cores"] >= 1
    assert "model" not in engine.state.changed  # detecting changed nothing the client holds
    energy = engine.request(wire.Energy())
    assert energy and all(len(row) == 2 and row[0].startswith("Energy") for row in energy)
    assert ["demo:tiny — " in label for label, source in engine.request(wire.Demos()) if source == "demo:tiny"] \
        == [True]
    assert "cpu.onnxruntime" in json.dumps(engine.request(wire.Catalog()))
    assert engine.request(wire.SetTarget(target="cpu")) == "cpu"
    assert engine.request(wire.SetRequirements(overrides={"latency_ms": 2}))["latency_ms"] == 2
    assert set(engine.state.changed) == {"requirements"} and engine.results["requirements"]["latency_ms"] == 2
    assert engine.request(wire.SetOutDir(out=str(out))) == str(out)
    rows = engine.request(wire.Plugins())
    assert any(row["plugin"] == "cpu.onnxruntime" and row["reasons"] == [] for row in rows)

    assert engine.request(wire.Save()) is None
    on_disk = read_results(out / RESULTS_NAME)
    assert on_disk.model.name == "tiny" and on_disk.requirements.latency_ms == 2

    # A step that needs another first is an error that says which, with the state; the engine goes on.
    with pytest.raises(PlannerError) as exc:
        engine.request(wire.Decide())
    assert "baseline" in exc.value.problem and "run the baseline step first" in exc.value.fix
    assert "model" in engine.state.done
    assert engine.request(wire.SetTarget(target="cpu")) == "cpu"

    # Every answer carries its command's id, in order, and the state's count goes up with each.
    answers = engine.messages("result") + engine.messages("error")
    assert sorted(m.id for m in answers) == list(range(1, len(answers) + 1))
    seqs = [m.state.seq for m in sorted(answers, key=lambda m: m.id)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


@pytest.mark.worker
def test_a_plan_step_by_step_with_an_answer_and_a_cancel(engine, tmp_path):
    out = tmp_path / "out"
    _open(engine, out)

    ceilings = engine.ask(wire.MeasureCeilings(quick=True))
    assert ceilings.value["peak_flops"]["fp32"] > 0
    assert "hardware" in ceilings.state.done
    ceilings_events = engine.messages("event", ceilings.id)
    assert any(m.event.kind == "stage" and m.event.stage == "ceilings" for m in ceilings_events)

    profile = Background(engine, wire.Profile(quick=True))
    profile.join()
    assert profile.error is None, profile.error
    reply = profile.reply
    assert reply.value["model"]["name"] == "tiny" and reply.value["latency_ms"]["p50_ms"] > 0
    assert "profile" in reply.state.done
    # The profile's progress came as events tagged with its id, and reached the command's listener.
    tagged = engine.messages("event", reply.id)
    assert [m.event.message for m in tagged] == [e.message for e in profile.events]
    assert any("timing the baseline" in e.message for e in profile.events)
    assert read_results(out / RESULTS_NAME).baseline is not None  # the profile wrote results.json

    decided = engine.ask(wire.Decide())
    state = decided.state
    assert {"plan", "profile"} <= set(state.done) and "checklist" not in state.done
    checklist = engine.results["checklist"]
    assert checklist and engine.results["plan"]["steps"]
    asked = [item["id"] for item in checklist if item["status"] == "ask-user"]
    assert asked, "demo:tiny's checklist has a question for the user"
    rows = engine.request(wire.Plugins())
    assert any(row["planned"] for row in rows)

    # New requirements make the plan out of date (kept, marked stale); the user's answers re-plan.
    stale = engine.ask(wire.SetRequirements(overrides={"latency_ms": 0.001})).state
    assert "plan" in stale.stale and "plan" not in stale.done
    state = engine.ask(wire.Decide(replies={asked[0]: "no"})).state
    assert {"plan", "checklist"} <= set(state.done) and state.stale == ()
    assert state.replies == {asked[0]: "no"}
    item = next(i for i in engine.results["checklist"] if i["id"] == asked[0])
    assert item["status"] != "ask-user" and item["value"] is False

    # An optimize cancelled after its first candidate stops at the next one and keeps what it measured.
    optimize = Background(engine, wire.Optimize(plugins=["cpu.onnxruntime"]))
    first = optimize.wait_for(lambda e: e.kind == "candidate_done")
    engine.cancel()
    optimize.join()
    assert optimize.error is None, optimize.error
    candidates = engine.results["candidates"]
    labels = [c["label"] for c in candidates]
    assert first.data["label"] in labels
    assert candidates[0]["fidelity"]["reference"] is True  # the baseline stays first
    assert any("cancelled" in w for w in engine.results["warnings"])
    assert all(m.id == optimize.reply.id for m in engine.messages("event") if m.event.kind == "candidate")

    finished = engine.ask(wire.Finish())
    assert engine.results["status"] == "interrupted"  # the last run was cancelled
    assert finished.value["out_dir"] == str(out)
    assert (out / "report.md").is_file() and finished.value["report_path"]
    assert read_results(out / RESULTS_NAME).status == "interrupted"
    # The results the states built are the results the engine wrote.
    assert read_results(out / RESULTS_NAME) == results_from_data(engine.results)

    engine.send(wire.Shutdown())
    assert engine.process.wait(timeout=WAIT_S) == 0
    heard_bye(engine)
    assert engine.bye is not None and engine.bye.status == "ok" and engine.bye.out_dir == str(out)
    assert engine.stray == []


@pytest.mark.worker
def test_cancel_now_stops_the_profile_and_the_engine_answers_after(engine, tmp_path):
    _open(engine, tmp_path / "out")
    profile = Background(engine, wire.Profile(quick=True))
    profile.wait_for(lambda e: "timing the baseline" in e.message)
    # While it measures, a quick step is answered at once (its state names the running step); a long one is refused.
    assert engine.ask(wire.SetTarget(target="cpu")).state.running == "profile"
    with pytest.raises(PlannerError) as busy:
        engine.request(wire.MeasureCeilings(quick=True))
    assert busy.value.problem == "busy: profile is still running" and "cancel" in busy.value.fix
    engine.cancel(now=True)
    profile.join(30)
    assert isinstance(profile.error, PlannerError), profile.reply and "the profile ran to its end"
    assert profile.error.problem.startswith("profile was cancelled before it finished")
    assert profile.error.fix == "run profile again to measure it"
    assert "profile" not in engine.state.done
    assert engine.ask(wire.SetTarget(target="cpu")).state.running == ""  # still answering, nothing runs
