"""Every command and message of the engine protocol, through a real `planner engine` process.

The client sends open, run, answer, cancel and shutdown; the engine answers with hello, event, result,
error and bye. Each event and answer carries its command's id, and each answer the session's state.
"""

from __future__ import annotations

import json

import pytest
from engine_support import WAIT_S, Background, RecordingClient, heard_bye

from planner import __version__
from planner.codec import from_data
from planner.engine.protocol import COMMANDS, MESSAGES, PROTOCOL_VERSION, QUICK_STEPS, STEPS
from planner.errors import PlannerError
from planner.hardware import HardwareProfile
from planner.results import RESULTS_NAME, read_results


def _open(engine: RecordingClient, out, **settings) -> dict:
    return engine.request({"type": "open", "model": "demo:tiny", "target": "cpu", "out": str(out), **settings})


def _run(engine: RecordingClient, step: str, **args) -> dict:
    return engine.request({"type": "run", "step": step, "args": args})


def test_the_protocol_names_what_the_tests_cover():
    # If a command, message or step is added, the tests below must learn it too.
    assert COMMANDS == ("open", "run", "answer", "cancel", "shutdown")
    assert MESSAGES == ("hello", "event", "result", "error", "bye")
    assert set(QUICK_STEPS) <= set(STEPS)


def test_hello_then_shutdown_says_bye_and_exits_0(engine):
    hello = engine.hello
    assert hello["type"] == "hello"
    assert hello["protocol"] == PROTOCOL_VERSION
    assert hello["planner"] == __version__
    assert hello["pid"] == engine.process.pid
    hardware = from_data(hello["hardware"], HardwareProfile)  # the detected profile, as results.json holds it
    assert hardware.cpu.logical_cores >= 1 and hardware.device_class

    engine.send({"type": "shutdown"})
    assert engine.process.wait(timeout=30) == 0
    heard_bye(engine)
    assert engine.bye is not None and engine.bye["status"] == "ok" and engine.bye["reason"] == "the client asked"
    assert engine.bye["out_dir"] is None  # nothing was opened
    assert not engine.alive and engine.death is None


def test_open_and_the_quick_steps_answer_with_the_session_state(engine, tmp_path):
    out = tmp_path / "out"
    opened = _open(engine, out, requirements={"latency_ms": 5})
    assert opened["type"] == "result"
    assert opened["value"]["name"] == "tiny" and opened["value"]["source"] == "demo:tiny"
    state = opened["state"]
    assert {"model", "target", "requirements"} <= set(state["done"])
    assert "profile" not in state["done"] and state["stale"] == []
    assert state["out_dir"] == str(out) and state["running"] == ""
    assert state["results"]["model"]["name"] == "tiny" and state["results"]["target"] == "cpu"
    assert state["results"]["requirements"]["latency_ms"] == 5

    assert _run(engine, "detect")["value"]["cpu"]["logical_cores"] >= 1
    energy = _run(engine, "energy")["value"]
    assert energy and all(len(row) == 2 and row[0].startswith("Energy") for row in energy)
    assert ["demo:tiny — " in label for label, source in _run(engine, "demos")["value"] if source == "demo:tiny"] \
        == [True]
    assert "cpu.onnxruntime" in json.dumps(_run(engine, "catalog")["value"])
    assert _run(engine, "target", target="cpu")["value"] == "cpu"
    assert _run(engine, "requirements", overrides={"latency_ms": 2})["value"]["latency_ms"] == 2
    assert _run(engine, "out_dir", out=str(out))["value"] == str(out)
    rows = _run(engine, "plugins")["value"]
    assert any(row["plugin"] == "cpu.onnxruntime" and row["reasons"] == [] for row in rows)

    saved = _run(engine, "save")
    assert saved["value"] is None
    on_disk = read_results(out / RESULTS_NAME)
    assert on_disk.model.name == "tiny" and on_disk.requirements.latency_ms == 2

    # A step that needs another first is an error that says which, with the state; the engine goes on.
    with pytest.raises(PlannerError) as exc:
        _run(engine, "decide")
    assert "baseline" in exc.value.problem and "run the baseline step first" in exc.value.fix
    assert "model" in exc.value.state["done"]
    assert _run(engine, "target", target="cpu")["value"] == "cpu"

    # Every answer carries its command's id, in order, and the state's count goes up with each.
    answers = engine.messages("result") + engine.messages("error")
    assert sorted(m["id"] for m in answers) == list(range(1, len(answers) + 1))
    seqs = [m["state"]["seq"] for m in sorted(answers, key=lambda m: m["id"])]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


@pytest.mark.worker
def test_a_plan_step_by_step_with_an_answer_and_a_cancel(engine, tmp_path):
    out = tmp_path / "out"
    _open(engine, out)

    ceilings = _run(engine, "ceilings", quick=True)
    assert ceilings["value"]["peak_flops"]["fp32"] > 0
    assert "hardware" in ceilings["state"]["done"]
    ceilings_events = engine.messages("event", ceilings["id"])
    assert any(m["event"]["kind"] == "stage" and m["event"]["stage"] == "ceilings" for m in ceilings_events)

    profile = Background(engine, {"type": "run", "step": "profile", "args": {"quick": True}})
    profile.join()
    assert profile.error is None, profile.error
    reply = profile.reply
    assert reply["value"]["model"]["name"] == "tiny" and reply["value"]["latency_ms"]["p50_ms"] > 0
    assert "profile" in reply["state"]["done"]
    # The profile's progress came as events tagged with its id, and reached the command's listener.
    tagged = engine.messages("event", reply["id"])
    assert [m["event"]["message"] for m in tagged] == [e.message for e in profile.events]
    assert any("timing the baseline" in e.message for e in profile.events)
    assert read_results(out / RESULTS_NAME).baseline is not None  # the profile wrote results.json

    decided = _run(engine, "decide")
    state = decided["state"]
    assert {"plan", "profile"} <= set(state["done"]) and "checklist" not in state["done"]
    checklist = state["results"]["checklist"]
    assert checklist and state["results"]["plan"]["steps"]
    asked = [item["id"] for item in checklist if item["status"] == "ask-user"]
    assert asked, "demo:tiny's checklist has a question for the user"
    rows = _run(engine, "plugins")["value"]
    assert any(row["planned"] for row in rows)

    # New requirements make the plan out of date (kept, marked stale); the user's answers re-plan.
    stale = _run(engine, "requirements", overrides={"latency_ms": 0.001})["state"]
    assert "plan" in stale["stale"] and "plan" not in stale["done"]
    answered = engine.request({"type": "answer", "replies": {asked[0]: "no"}})
    state = answered["state"]
    assert {"plan", "checklist"} <= set(state["done"]) and state["stale"] == []
    assert state["replies"] == {asked[0]: "no"}
    item = next(i for i in state["results"]["checklist"] if i["id"] == asked[0])
    assert item["status"] != "ask-user" and item["value"] is False

    # An optimize cancelled after its first candidate stops at the next one and keeps what it measured.
    optimize = Background(engine, {"type": "run", "step": "optimize", "args": {"plugins": ["cpu.onnxruntime"]}})
    first = optimize.wait_for(lambda e: e.kind == "candidate_done")
    engine.cancel()
    optimize.join()
    assert optimize.error is None, optimize.error
    candidates = optimize.reply["state"]["results"]["candidates"]
    labels = [c["label"] for c in candidates]
    assert first.data["label"] in labels
    assert candidates[0]["fidelity"]["reference"] is True  # the baseline stays first
    assert any("cancelled" in w for w in optimize.reply["state"]["results"]["warnings"])
    assert all(m["id"] == optimize.reply["id"] for m in engine.messages("event") if m["event"]["kind"] == "candidate")

    finished = _run(engine, "finish")
    assert finished["state"]["results"]["status"] == "interrupted"  # the last run was cancelled
    assert finished["value"]["out_dir"] == str(out)
    assert (out / "report.md").is_file() and finished["value"]["report_path"]
    assert read_results(out / RESULTS_NAME).status == "interrupted"

    engine.send({"type": "shutdown"})
    assert engine.process.wait(timeout=WAIT_S) == 0
    heard_bye(engine)
    assert engine.bye is not None and engine.bye["status"] == "ok" and engine.bye["out_dir"] == str(out)
    assert engine.stray == []


@pytest.mark.worker
def test_cancel_now_stops_the_profile_and_the_engine_answers_after(engine, tmp_path):
    _open(engine, tmp_path / "out")
    profile = Background(engine, {"type": "run", "step": "profile", "args": {"quick": True}})
    profile.wait_for(lambda e: "timing the baseline" in e.message)
    # While it measures, a quick step is answered at once (its state names the running step); a long one is refused.
    assert _run(engine, "target", target="cpu")["state"]["running"] == "profile"
    with pytest.raises(PlannerError) as busy:
        _run(engine, "ceilings", quick=True)
    assert busy.value.problem == "busy: profile is still running" and "cancel" in busy.value.fix
    engine.cancel(now=True)
    profile.join(30)
    assert isinstance(profile.error, PlannerError), profile.reply and "the profile ran to its end"
    assert profile.error.problem.startswith("profile was cancelled before it finished")
    assert profile.error.fix == "run profile again to measure it"
    assert "profile" not in profile.error.state["done"]
    assert _run(engine, "target", target="cpu")["state"]["running"] == ""  # still answering, nothing runs
