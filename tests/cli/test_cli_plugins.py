"""`planner plugins`: what each plugin declares, in words, and the ones that did not load with why."""

from __future__ import annotations

import json


def test_plugins_lists_each_declaration_in_words(cli) -> None:
    code, out, _ = cli("plugins")
    assert code == 0
    ort = out.split("cpu.onnxruntime", 1)[1].split("\ncpu.openvino ", 1)[0]
    assert "phase 1 (quick wins), runtime onnxruntime, same arithmetic" in ort
    assert "measures: a runtime with graph-level fusion and constant folding" in ort
    assert "torch.eager" in out and "the baseline" in out
    assert "cpu.graph-runtime" not in out  # ids stay inside; people read words


def test_a_plugin_that_failed_to_load_is_listed_with_why(cli, monkeypatch) -> None:
    monkeypatch.setenv("PLANNER_PLUGINS", "plan_test_plugins:NotThere")
    code, out, _ = cli("plugins")
    assert code == 0 and "plan_test_plugins:NotThere" in out and "not loaded" in out


def test_plugins_json_carries_the_declarations(cli) -> None:
    code, out, _ = cli("plugins", "--json")
    data = json.loads(out)
    prune = next(p for p in data["plugins"] if p["name"] == "architecture.prune")
    assert prune["phase"] == 2 and prune["arithmetic"] == "approximate" and "arch.pruning" in prune["actions"]
