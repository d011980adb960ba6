"""A results file written before the decision tree ruled out PyTorch settings for ONNX-only models may still hold
one as a plan step: the report never makes it the Summary's Next, nor lists it as a step left to measure."""

from __future__ import annotations

from report_fixtures import FIGURE_LINKS, full_report, section

MKLDNN = "Enable oneDNN (MKLDNN): torch.backends.mkldnn.enabled = True"


def _onnx_only_with_an_mkldnn_step(results: dict) -> dict:
    """The fixture as an ONNX-only model's run whose plan (an older planner's) starts with the MKLDNN advice."""
    results["model"] = {**results["model"], "source": "ocr/det.onnx", "kind": "onnx", "name": "det"}
    results["baseline"]["model"] = {**results["baseline"]["model"], "kind": "onnx"}
    results["baseline"]["findings"] = []
    step = {"order": 0, "plugins": [], "title": MKLDNN, "why": "b. Enable MKLDNN (Intel CPUs): mkldnn state not "
            "recorded (GenuineIntel)", "expected": "Method expectation, not a measurement: oneDNN kernels.",
            "fidelity_gated": False, "kind": "advice", "phase": 1, "source": "cpu.3b"}
    results["plan"]["steps"] = [step, *results["plan"]["steps"]]
    return results


def test_a_pytorch_setting_is_never_the_next_step_of_an_onnx_only_model(results) -> None:
    text = full_report(_onnx_only_with_an_mkldnn_step(results), figures=FIGURE_LINKS)
    summary = section(text, "Summary")
    next_line = next(line for line in summary.splitlines() if "**Next**" in line)
    assert "MKLDNN" not in next_line and "Channels-last" not in next_line
    roadmap = section(text, "Roadmap")
    assert "MKLDNN" not in roadmap and "Channels-last memory format (" not in roadmap


def test_the_same_step_stays_for_a_pytorch_model(results) -> None:
    results = _onnx_only_with_an_mkldnn_step(results)
    results["model"]["kind"] = results["baseline"]["model"]["kind"] = "demo"
    summary = section(full_report(results, figures=FIGURE_LINKS), "Summary")
    assert f"The biggest remaining step, not measured in this run, is {MKLDNN}" in summary
