"""Compression and device-target sections: measured sizes and tiers, ternary as potential, estimates labelled."""

from __future__ import annotations

from report_fixtures import whole

from planner.hardware.boards import get_profile, project
from planner.report.data import ReportData
from planner.report.sections import compression, device_targets


def _cand(label: str, precision: str, p50: float, size: int, status: str = "ok", reason: str = "") -> dict:
    return {"label": label, "plugin": "x", "precision": precision, "status": status, "reason": reason,
            "latency_ms": {"p50_ms": p50}, "size_bytes": size, "peak_memory_bytes": 50 * 2**20,
            "fidelity": {"cosine": 0.99, "accuracy": 0.9}}


def _results(**extra) -> dict:
    ternary = _cand("onnxruntime ternary 2-bit (cpu, 1t)", "ternary", 0.5, 100_000, "rejected",
                    "fails fidelity: needs ternary-aware training (cosine 0.8 < 0.98)")
    ternary["info"] = {"ternary_layers": [{"layer": "fc1", "op": "MatMulNBits", "storage": "packed 2-bit"},
                                          {"layer": "conv", "op": "Conv", "storage": "fp32"}]}
    return whole({"target": "edge", "candidates": [_cand("torch eager fp32 (cpu)", "fp32", 5.0, 1_600_000),
                                                   _cand("onnxruntime int8 dynamic (cpu, 2t)", "int8", 2.0, 420_000),
                                                   ternary], **extra})


def test_compression_table_uses_measured_sizes_and_marks_failed_ternary_as_potential():
    text = "\n".join(compression.render(ReportData(_results())))
    assert "## Compression" in text
    assert "| onnxruntime ternary 2-bit (cpu, 1t) | 2 |" in text and "16.0x" in text and "3.8x" in text
    assert "potential only — fails fidelity: needs ternary-aware training" in text
    assert "| fc1 | MatMulNBits | packed 2-bit |" in text


def test_no_compression_table_off_edge_without_ternary():
    results = _results(target="cpu")
    results["candidates"] = results["candidates"][:2]
    assert compression.render(ReportData(results)) == []


def test_device_targets_judge_measured_figures_and_label_the_projection():
    rpi5 = get_profile("rpi5")
    row = {"label": "onnxruntime int8 dynamic (cpu, 2t)", "measured_p50_ms": 2.0,
           **project(rpi5, flops=2e6, weight_bytes=420_000, int8=True)}
    text = "\n".join(device_targets.render(ReportData(_results(edge_device={"profile": rpi5.to_info(),
                                                                            "candidates": [row]}))))
    assert "## Device targets" in text and "rules of thumb" in text
    assert "| torch eager fp32 (cpu) | 5 ms |" in text  # meets the edge tier: 500 ms, 50 MiB, 5 MiB
    assert "### Projection onto Raspberry Pi 5 (estimate)" in text
    assert "datasheet-derived, not measured" in text and "Basis: estimate, not measured" in text
    assert "not deployable: failed the fidelity check" in text


def test_device_targets_only_for_edge_plans():
    assert device_targets.render(ReportData(_results(target="cpu"))) == []


def test_a_changed_model_without_a_file_has_no_size_on_disk():
    results = _results()
    pruned = {**results["candidates"][0], "label": "prune 25% channels (L1)", "plugin": "architecture.prune",
              "config": {"architecture": "approximate"}, "size_bytes": None}
    results["candidates"] = [*results["candidates"], pruned]
    text = "\n".join(device_targets.render(ReportData(results)))
    row = next(line for line in text.splitlines() if line.startswith("| prune 25% channels (L1) |"))
    assert "| not measured |" in row and "model size not measured" in row
