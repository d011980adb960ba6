"""Roadmap: settings of one runtime and precision are near-duplicates, shown as one line per family."""

from __future__ import annotations

import copy

from report_fixtures import full_report


def _phase1(md: str) -> str:
    return md.split("### Phase 1")[1].split("### Phase 2")[0]


def test_a_second_setting_of_one_runtime_is_folded_under_the_fastest(results: dict) -> None:
    ort = next(c for c in results["candidates"] if c["label"] == "onnxruntime all 2t")
    slower = copy.deepcopy(ort)
    slower.update(label="onnxruntime all 1t", speedup=1.1)
    slower["latency_ms"] = {**slower["latency_ms"], "p50_ms": ort["latency_ms"]["p50_ms"] * 1.2}
    results["candidates"].append(slower)
    phase1 = _phase1(full_report(results))
    steps = [line.split("**")[1] for line in phase1.splitlines() if line[:1].isdigit()]
    assert [s for s in steps if s.startswith("onnxruntime")] == ["onnxruntime all 2t"]
    also = next(line for line in phase1.splitlines() if line.startswith("- Also measured"))
    assert "other settings of the steps above, slower than their lead" in also and "onnxruntime all 1t (" in also
    # OpenVINO fp32 is another runtime for the same step: it is folded in as an alternative, not a step of its own.
    alternatives = next(line for line in phase1.splitlines() if line.startswith("   - Or: "))
    assert "openvino f32 latency 2t, " in alternatives and "openvino f32 latency 2t" not in steps


def test_one_setting_per_family_folds_nothing(results: dict) -> None:
    assert "other settings of the steps above" not in _phase1(full_report(results))
