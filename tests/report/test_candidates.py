"""The report's All candidates section: best throughput over batch and parallel streams, and how streams ran."""

from __future__ import annotations

from report_fixtures import FIGURE_LINKS, full_report, section

OV_BASIS = "OpenVINO THROUGHPUT hint: 2 streams, 2 requests in flight (AsyncInferQueue)"


def test_parallel_streams_show_beside_the_sweep(results) -> None:
    ov = next(c for c in results["candidates"] if c["label"] == "openvino f32 latency 2t")
    ov["streams"] = [{"batch": 2, "streams": 1, "samples_per_s": 4.8, "basis": "as configured, one request at a time"},
                     {"batch": 2, "streams": 2, "samples_per_s": 7.9, "basis": OV_BASIS, "sustained_per_s": 7.1}]
    ort = next(c for c in results["candidates"] if c["label"] == "onnxruntime all 2t")
    ort.setdefault("info", {})["streams_skipped"] = "1 thread: no room for parallel ONNX Runtime sessions"
    text = full_report(results, figures=FIGURE_LINKS)
    body = section(text, "All candidates")
    row = next(line for line in body.splitlines() if line.startswith("|") and "openvino f32 latency 2t" in line)
    assert "7.9 samples/s @ batch 2 × 2 streams" in row
    assert ("| openvino f32 latency 2t | 2 | 4.8 samples/s | 7.9 samples/s | 2 | 7.1 samples/s | "
            + OV_BASIS + " |") in body
    assert "- onnxruntime all 2t: no parallel streams: 1 thread: no room for parallel ONNX Runtime sessions" in body
    assert "streams_skipped" not in body  # said in words, not listed among the settings in force


def test_without_streams_the_section_keeps_its_shape(results) -> None:
    text = full_report(results, figures=FIGURE_LINKS)
    assert "Parallel streams:" not in text
    assert "5.12 samples/s @ batch 4 |" in text
