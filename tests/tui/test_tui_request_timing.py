"""The TUI's Profile and Results steps say how the model call was timed (the pool of distinct inputs it
recorded) and, with `--pipeline`, where the user's whole request goes."""

from __future__ import annotations

from types import SimpleNamespace

from tui_support import typed_candidate

from planner.codec import to_data
from planner.results import PipelineSplit
from planner.tui.screens.profile import timing_note
from planner.tui.screens.results import candidate_detail

SPLIT = PipelineSplit(pipeline="serve.py:decode", runtime="onnxruntime all 2t", requests=120, distinct_samples=16,
                      samples_from="SAMPLES in serve.py", preprocess_ms=3.0, model_ms=1.0, request_p50_ms=4.0)


def test_the_profile_says_how_calls_were_fed_and_splits_the_request() -> None:
    note = timing_note(SimpleNamespace(info={"input_pool": 8}, pipeline=SPLIT))
    assert note.startswith("Each timed call takes the next of 8 distinct inputs in turn")
    assert "comparable with your own loop over distinct requests" in note
    assert "- with the original model (onnxruntime all 2t): model 25% of the request, preprocessing 75%" in note
    # Results recorded before the pool was (and without --pipeline): nothing to say, so nothing is shown.
    assert timing_note(SimpleNamespace(info={}, pipeline=None)) == ""


def test_a_candidate_detail_carries_its_split_and_the_pool() -> None:
    candidate = {"label": "onnxruntime all 2t", "plugin": "cpu.onnxruntime", "precision": "fp32", "status": "ok",
                 "latency_ms": {"p50_ms": 1.0, "p95_ms": None, "p99_ms": None, "samples": 40},
                 "info": {"input_pool": 8}, "pipeline": to_data(SPLIT)}
    text = candidate_detail(typed_candidate(candidate), 1).plain
    assert ("your request end to end: with this candidate (onnxruntime all 2t): model 25% of the request, "
            "preprocessing 75%") in text
    assert "timing: Each timed call takes the next of 8 distinct inputs in turn" in text
