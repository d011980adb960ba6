"""Candidate labels shortened for the Results table and plots: different candidates never read the same."""

from __future__ import annotations

import dataclasses

import pytest
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from tui_support import PlannerApp, RecordedSession, drive, run_app, typed_candidate

from planner.results.rows import CandidateRow
from planner.tui.formatting import short_labels
from planner.tui.screens.results import plot_series

LABELS = ["torch eager fp32 (cpu)", "torch cpu fp32 2t channels_last", "torch cpu fp32 2t channels_last compile",
          "torch cpu bf16 2t channels_last", "onnxruntime all seq 2t", "onnxruntime all parallel 2x1t",
          "openvino f32 latency 2t", "openvino bf16 latency 2t", "openvino int8 nncf f32 latency 2t static",
          "openvino int8 nncf-ac bf16 latency 2t", "onnxruntime int8 static QDQ (cpu, 2t)"]


@pytest.mark.parametrize("width", [12, 16, 18, 24, 40])
def test_short_labels_stay_different_and_fit(width):
    short = short_labels(LABELS, width)
    assert len(set(short.labels)) == len(LABELS)
    assert all(len(label) <= width for label in short.labels)


def test_precision_and_threads_survive_and_the_legend_explains_what_went():
    short = short_labels(LABELS, 18)
    by_label = dict(zip(LABELS, short.labels))
    assert "f32" in by_label["openvino f32 latency 2t"] and "bf16" in by_label["openvino bf16 latency 2t"]
    assert "2x1t" in by_label["onnxruntime all parallel 2x1t"]
    assert "OV = OpenVINO" in short.legend() and "2t = 2 threads" in short.legend()


def test_words_every_label_shares_are_dropped_first():
    short = short_labels(["openvino f32 latency 2t", "openvino bf16 latency 2t"], 12)
    assert short.labels == ["f32", "bf16"]
    assert short.legend().startswith("all: openvino latency 2t")


def test_plots_label_fp32_and_bf16_apart():
    cands = [CandidateRow(typed_candidate({"label": label, "latency_ms": {"p50_ms": 1.0 + i}}), rank=i + 1)
             for i, label in enumerate(LABELS)]
    labels, _ = plot_series(cands, lambda c: c.latency_ms.p50_ms)
    assert len(set(labels)) == len(LABELS)


def test_results_table_at_80x24_tells_fp32_from_bf16(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    cands = list(session.recorded.candidates)
    names = {c.label: i for i, c in enumerate(cands)}
    # Two candidates that differ only in precision, as the OpenVINO plugin labels them.
    i = names["openvino f32 throughput 2t"]
    cands[i] = dataclasses.replace(cands[i], label="openvino bf16 latency 2t", precision="bf16")
    session.recorded = dataclasses.replace(session.recorded, candidates=tuple(cands))
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        shown = [str(table.get_cell_at(Coordinate(r, 0))).strip() for r in range(table.row_count)]
        assert len(set(shown)) == len(shown), shown
        assert any("bf16" in s for s in shown) and any("f32" in s and "bf16" not in s for s in shown)

    run_app(app, body)
