"""Roadmap: settings of one runtime and precision are near-duplicates, shown as one line per family."""

from __future__ import annotations

import copy

from planner.report.markdown import render_markdown


def _phase1(md: str) -> str:
    return md.split("### Phase 1")[1].split("### Phase 2")[0]


def test_a_second_setting_of_one_runtime_is_folded_under_the_fastest(results: dict) -> None:
    ort = next(c for c in results["candidates"] if c["label"] == "onnxruntime all 2t")
    slower = copy.deepcopy(ort)
    slower.update(label="onnxruntime all 1t", speedup=1.1)
    slower["latency_ms"] = {**slower["latency_ms"], "p50_ms": ort["latency_ms"]["p50_ms"] * 1.2}
    results["candidates"].append(slower)
    phase1 = _phase1(render_markdown(results))
    leading = [line for line in phase1.splitlines() if line.startswith("- **onnxruntime")]
    assert [line.split("**")[1] for line in leading] == ["onnxruntime all 2t"]
    assert "Other settings of the same runtime and precision" in phase1 and "onnxruntime all 1t (" in phase1
    # OpenVINO fp32 is another family: it keeps its own line.
    assert "- **openvino f32 latency 2t**" in phase1


def test_one_setting_per_family_folds_nothing(results: dict) -> None:
    assert "Other settings of the same runtime and precision" not in _phase1(render_markdown(results))
