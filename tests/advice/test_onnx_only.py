"""A step that names a framework applies only where the model has it: an ONNX-only model (no PyTorch module) is
never told to enable MKLDNN, switch to channels-last or torch.compile, neither as a step nor as the Summary's Next.

Issue 34: on an Intel CPU the CPU tree's "Enable oneDNN (MKLDNN): torch.backends.mkldnn.enabled = True" became the
Next of an ONNX-only OCR detector, whose baseline (ONNX Runtime's defaults) records no mkldnn flag.
"""

from __future__ import annotations

import pytest
from plugin_catalog import CATALOG

from planner.advice import answer_checklist, evaluate_tree, load_requirements, make_plan
from planner.advice.tree import PYTORCH_SETTINGS, not_applicable
from planner.codec import to_data
from planner.report.data import ReportData
from planner.report.sections import summary

ONNX_ONLY = "does not apply: the model is ONNX only (no PyTorch module)"
TORCH_WORDS = ("torch", "PyTorch", "MKLDNN", "oneDNN", "Channels-last", "channels_last")


@pytest.fixture
def ocr_detector(make_baseline) -> dict:
    """An ONNX-only OCR text detector's baseline, timed with ONNX Runtime's defaults: no mkldnn flag, no layers."""
    baseline = make_baseline(mkldnn=None, bound=None, input_shape=(1, 3, 640, 640), intra=2, inter=1)
    baseline["model"] = {"name": "det", "source": "ocr/det.onnx", "kind": "onnx", "parameters": 2_400_000,
                         "size_bytes": 9_600_000}
    baseline["layers"] = []
    baseline["info"] = {"device": "cpu", "precision": "fp32"}
    baseline["runtime"] = "onnxruntime defaults (ONNX model)"
    baseline["spec"] = {"plugin": "cpu.onnxruntime", "config": {"defaults": True}}
    return baseline


def _plan(hw, baseline, target="cpu"):
    req = load_requirements(device_class=str(hw.device_class), overrides={"latency_ms": 10})
    return make_plan(target=target, hw=hw, baseline=baseline, requirements=req, catalog=CATALOG)


def _visited(path):
    return {v.id: v for v in path.visited}


def test_an_onnx_only_model_on_an_intel_cpu_gets_no_pytorch_step(cpu_server, ocr_detector) -> None:
    assert cpu_server.cpu.vendor == "Intel"
    plan = _plan(cpu_server, ocr_detector)
    visited = _visited(plan.path)
    for node in ("cpu.3b", "cpu.3c", "cpu.3f"):  # MKLDNN, channels-last, torch.compile
        assert visited[node].result == "ruled out", node
        assert ONNX_ONLY in visited[node].evidence, visited[node].evidence
    assert "torch.backends.mkldnn is a PyTorch setting" in visited["cpu.3b"].evidence
    assert not [a for a in plan.path.actions if a.action.id in PYTORCH_SETTINGS]
    assert not [s for s in plan.steps if any(w in s.title for w in TORCH_WORDS)]
    # What does apply stays: the ONNX runtimes, and the thread count (the runtimes have one too).
    assert {"cpu.onnxruntime", "cpu.openvino"} <= set(plan.plugins)
    assert any(s.title.startswith("Set intra-op threads") for s in plan.steps)


def test_the_threads_step_of_an_onnx_only_model_does_not_read_torch_threads(cpu_server, ocr_detector) -> None:
    visited = _visited(_plan(cpu_server, ocr_detector).path)
    assert "torch's thread counts do not apply" in visited["cpu.2"].evidence
    assert "torch uses" not in visited["cpu.2"].evidence
    answers = {a.id: a for a in answer_checklist("cpu", cpu_server, ocr_detector)}
    assert answers["cpu.threading"].answer == "Set by the runtime, not torch: the model is ONNX only"
    assert answers["cpu.mkldnn"].answer == "Does not apply: the model is ONNX only"
    assert "torch.backends.mkldnn is a PyTorch setting" in answers["cpu.mkldnn"].evidence
    assert "per-layer profile times a PyTorch module's layers" in answers["cpu.slowest_ops"].evidence


def test_the_summary_next_of_an_onnx_only_model_is_no_pytorch_setting(cpu_server, ocr_detector) -> None:
    plan = _plan(cpu_server, ocr_detector)
    # The report reads results.json's whole latency record, which the advice's look-alike leaves out.
    latency = {**ocr_detector["latency_ms"], "min_ms": 38.0, "max_ms": 41.0, "p90_ms": 39.5, "iqr_ms": 0.4,
               "iqr_over_median": 0.01, "ci95_rel": 0.01}
    results = {"status": "ok", "target": "cpu", "model": ocr_detector["model"],
               "baseline": {**ocr_detector, "latency_ms": latency, "throughput": [], "bottleneck": None},
               "plan": to_data(plan.record()), "candidates": [],
               # As a real run records it: the PyTorch plugin cannot run an ONNX file.
               "skipped_plugins": [{"plugin": "cpu.torch",
                                    "reasons": ["the model is ONNX-only: cpu.torch needs a PyTorch module"]}]}
    lines = summary.render(ReportData(results))
    next_line = next(line for line in lines if "**Next**" in line)
    assert not any(w in next_line for w in TORCH_WORDS), next_line
    assert "ONNX Runtime with all graph optimizations" in next_line


def test_a_gpu_plan_for_an_onnx_only_model_does_not_torch_compile(a100_server, ocr_detector) -> None:
    baseline = {**ocr_detector, "device": "cuda", "target": "nvidia"}
    path = evaluate_tree("nvidia", a100_server, baseline, load_requirements(device_class="datacenter_gpu"),
                         catalog=CATALOG)
    node = _visited(path)["gpu.3c"]
    assert node.result == "ruled out" and ONNX_ONLY in node.evidence
    assert "torch.compile compiles a PyTorch module" in node.evidence
    assert _visited(path)["gpu.3d"].result == "recommended"  # TensorRT takes the ONNX file


def test_a_pytorch_model_keeps_its_pytorch_steps(cpu_server, make_baseline) -> None:
    visited = _visited(_plan(cpu_server, make_baseline(mkldnn=False)).path)
    assert visited["cpu.3b"].result == "recommended" and visited["cpu.3c"].result == "recommended"
    assert not_applicable("cpu.3b", make_baseline()) == ""
    assert not_applicable("cpu.3b", {"model": {"kind": "onnx"}}).startswith(ONNX_ONLY)
    assert not_applicable("cpu.3d", {"model": {"kind": "onnx"}}) == ""  # ONNX Runtime is no PyTorch setting
