"""Reading an older results.json: one `plugin` per step becomes a list, thread counts move to the spec (schema 2),
and a mapping of bottleneck classes becomes their groups."""

from __future__ import annotations

from planner.codec import from_data
from planner.results import results_from_data
from planner.results.analysis import BottleneckClassesRecord, BottleneckRecord
from planner.results.decisions import CheckStatus
from planner.results.schema import upgrade
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
    data = upgrade(_schema_2())
    assert data["schema_version"] == SCHEMA_VERSION
    assert [s["plugins"] for s in data["plan"]["steps"]] == [["cpu.onnxruntime"], []]
    assert all("plugin" not in s for s in data["plan"]["steps"])
    assert data["decision_path"]["actions"][0]["plugins"] == ["cpu.onnxruntime"]
    assert data["plan"]["decision_path"]["actions"][0]["plugins"] == ["cpu.onnxruntime"]


def test_a_runtimes_own_thread_spelling_becomes_the_specs_thread_counts() -> None:
    original = _schema_2()
    spec = upgrade(original)["candidates"][0]["spec"]
    assert spec["threads"] == 2 and spec["interop_threads"] == 1
    assert "threads" not in original["candidates"][0]["spec"]  # the caller's object is left alone


def _old_classes() -> dict:
    """An older baseline's bottleneck classes: class name to its layer rows, nothing counted."""
    return {"memory-bound": [{"layer": "gelu#6", "type": "GELU", "time_ms": 10.47, "time_share": 0.0377,
                              "cause": "moves bytes"}],
            "compute-bound": [{"name": "conv4", "time_ms": "slow", "reason": "does FLOPs"}, "fc"],
            "throughput-limited": []}


def test_an_older_mapping_of_bottleneck_classes_becomes_groups() -> None:
    baseline = {"bottleneck_classes": _old_classes()}
    original = {"schema_version": 1, "baseline": baseline}
    upgraded = upgrade(original)["baseline"]["bottleneck_classes"]
    record = from_data(upgraded, BottleneckClassesRecord)
    assert record.ranked_by == ""  # that form ranked by nothing it recorded; the report then prints no counts
    assert [g.kind for g in record.groups] == ["memory-bound", "compute-bound", "throughput-limited"]
    assert record.groups[0].top == (BottleneckRecord(layer="gelu#6", type="GELU", time_ms=10.47, time_share=0.0377,
                                                     cause="moves bytes"),)
    # Its other spellings settle, a bare value is a layer's name, and a time that is not a number is left out.
    assert record.groups[1].top == (BottleneckRecord(layer="conv4", cause="does FLOPs"), BottleneckRecord(layer="fc"))
    assert record.groups[2].top == ()
    assert all("layer_count" not in g and "time_share" not in g for g in upgraded["groups"])
    assert baseline["bottleneck_classes"] == _old_classes()  # the caller's object is left alone


def test_current_and_empty_bottleneck_classes_are_left_as_they_are() -> None:
    current = {"ranked_by": "measured time", "groups": [{"class": "memory-bound", "layer_count": 0, "time_ms": 0.0,
                                                         "time_share": 0.0, "top": []}]}
    for classes in (current, {}, None):
        data = {"schema_version": SCHEMA_VERSION, "baseline": {"bottleneck_classes": classes}}
        assert upgrade(data)["baseline"]["bottleneck_classes"] == classes


def test_a_check_recorded_before_its_status_gets_the_one_its_met_stood_for() -> None:
    checks = [{"name": "latency", "target": "< 50 ms", "measured": "40 ms", "met": True, "margin": "", "source": ""},
              {"name": "memory", "target": "< 1 GiB", "measured": "2 GiB", "met": False, "margin": "", "source": ""},
              {"name": "accuracy", "target": "drop 1%", "measured": None, "met": None, "margin": "", "source": ""},
              {"name": "energy", "target": "< 1 J", "measured": "2 J", "met": False, "status": "impossible",
               "margin": "", "source": ""}]
    data = {"schema_version": SCHEMA_VERSION, "requirement_checks": checks}
    typed = results_from_data(data).requirement_checks
    assert [c.status for c in typed] == [CheckStatus.MET, CheckStatus.MISSED, CheckStatus.NOT_MEASURED,
                                         CheckStatus.IMPOSSIBLE]
    assert "status" not in checks[0]  # the caller's object is left alone
