"""The evidence names candidates by their plain titles, shows how to apply them, and prints no snake_case key."""

from __future__ import annotations

import re

from report_fixtures import FIGURE_LINKS, full_report, section

_TITLES = {"torch eager fp32 (cpu)": "PyTorch eager FP32 on the CPU, default settings",
           "onnxruntime all 2t": "ONNX Runtime, all graph optimizations, sequential, 2 threads",
           "openvino f32 latency 2t": "OpenVINO FP32, latency hint, 2 threads",
           "openvino bf16 latency 2t": "OpenVINO BF16, latency hint, 2 threads",
           "torch channels_last compile 2t": "PyTorch FP32, channels-last, torch.compile, 2 threads"}
_ORT_CODE = ("import onnxruntime as ort\n\nso = ort.SessionOptions()\nso.intra_op_num_threads = 2\n"
             'session = ort.InferenceSession("model.onnx", so, providers=["CPUExecutionProvider"])')


def _described(results: dict) -> dict:
    for cand in results["candidates"]:
        cand["declared"] = {"phase": 1, "runtime": "x", "title": _TITLES[cand["label"]],
                            "apply": _ORT_CODE if cand["plugin"] == "cpu.onnxruntime" else ""}
    return results


def _snake_case(text: str) -> list[str]:
    """snake_case words outside code spans and code blocks."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    return re.findall(r"(?<![\w/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/.])", text)


def test_the_candidates_table_and_lists_use_titles(results) -> None:
    text = full_report(_described(results), figures=FIGURE_LINKS)
    candidates = section(text, "All candidates")
    rows = [line for line in candidates.splitlines() if line.startswith("| ")]
    for label, title in _TITLES.items():
        assert any(title in row for row in rows), title
        assert not any(f"| {label} |" in row for row in rows), label
    # The short label is still there to look up in results.json, as code.
    assert "**ONNX Runtime, all graph optimizations, sequential, 2 threads** (label `onnxruntime all 2t`" in candidates


def test_a_ranked_candidate_shows_its_runtime_code(results) -> None:
    candidates = section(full_report(_described(results), figures=FIGURE_LINKS), "All candidates")
    assert "```python\n" + _ORT_CODE + "\n```" in candidates


def test_settings_and_thread_records_read_as_words(results) -> None:
    text = full_report(_described(results), figures=FIGURE_LINKS)
    settings = section(text, "All candidates").split("Configuration in force")[1].split("###")[0]
    assert _snake_case(settings) == []
    assert "CPUs this process may use 2" in settings
    environment = section(text, "Environment")
    assert "Baseline thread settings: CPUs in the machine 64; CPUs this process may use 2; `OMP_NUM_THREADS` 2; " \
           "torch intra-op threads 2; torch inter-op threads 1." in environment
    assert _snake_case(environment) == []


def test_an_older_file_names_its_candidates_by_label(results) -> None:
    rows = [line for line in section(full_report(results, figures=FIGURE_LINKS), "All candidates").splitlines()
            if line.startswith("| ")]
    assert any("| onnxruntime all 2t |" in row or "| **onnxruntime all 2t** |" in row for row in rows)


def test_the_decision_speaks_in_titles_and_no_snake_case(results) -> None:
    """report.md (headline, Summary, the fastest candidates, Roadmap) names every candidate by its title and prints
    no snake_case identifier outside code."""
    from planner.report.markdown import render_markdown

    report = render_markdown(_described(results), figures=FIGURE_LINKS)
    decision = report.split("\n## Evidence\n", 1)[0]
    assert _snake_case(decision) == []
    assert "**Ship ONNX Runtime, all graph optimizations, sequential, 2 threads**" in decision
    for label in _TITLES:
        assert f"**{label}**" not in decision and f"| {label} |" not in decision
