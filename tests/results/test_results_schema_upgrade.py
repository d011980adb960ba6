"""Reading a schema-2 results.json: one `plugin` per step becomes a list, thread counts move to the spec."""

from __future__ import annotations

from planner.results.read import current_schema
from planner.results.values import SCHEMA_VERSION


def _schema_2() -> dict:
    step = {"order": 1, "plugin": "cpu.onnxruntime", "title": "ONNX Runtime", "phase": 1}
    advice = {"order": 2, "plugin": None, "title": "Scale horizontally", "phase": 1}
    path = {"target": "cpu", "visited": [], "actions": [{"action": "x", "plugin": "cpu.onnxruntime"}]}
    ort = {"plugin": "cpu.onnxruntime", "label": "ort 2t", "status": "ok", "precision": "fp32",
           "config": {"intra_op_num_threads": 2, "inter_op_num_threads": 1}, "spec": {"plugin": "cpu.onnxruntime"}}
    return {"schema_version": 2, "plan": {"steps": [step, advice], "decision_path": path},
            "decision_path": path, "candidates": [ort]}


def test_steps_and_actions_list_their_plugins() -> None:
    data = current_schema(_schema_2())
    assert data["schema_version"] == SCHEMA_VERSION
    assert [s["plugins"] for s in data["plan"]["steps"]] == [["cpu.onnxruntime"], []]
    assert all("plugin" not in s for s in data["plan"]["steps"])
    assert data["decision_path"]["actions"][0]["plugins"] == ["cpu.onnxruntime"]
    assert data["plan"]["decision_path"]["actions"][0]["plugins"] == ["cpu.onnxruntime"]


def test_a_runtimes_own_thread_spelling_becomes_the_specs_thread_counts() -> None:
    original = _schema_2()
    spec = current_schema(original)["candidates"][0]["spec"]
    assert spec["threads"] == 2 and spec["interop_threads"] == 1
    assert "threads" not in original["candidates"][0]["spec"]  # the caller's object is left alone
