"""The plan's end-to-end request timing at the profile step: a pipeline that fails is a warning with its fix,
the baseline records why, the plan goes on, and the checklist's bottleneck question stays with the user."""

from __future__ import annotations

import pytest

from planner.advice import AnswerStatus
from planner.pipeline import PlanSession
from planner.pipeline.request_timing import RequestTiming

FAILING = '''
import numpy as np

SAMPLES = [b"not a png"]


def decode(raw):
    raise ValueError("cannot decode this request")
'''


@pytest.mark.worker
def test_a_failing_pipeline_leaves_the_plan_going_and_the_question_open(tmp_path) -> None:
    path = tmp_path / "serve.py"
    path.write_text(FAILING)
    events = []
    session = PlanSession(on_event=events.append)
    session.load("demo:tiny")
    session.set_target("cpu")
    session.request_timing = RequestTiming(f"{path}:decode")
    baseline = session.profile(quick=True)
    assert baseline.latency_ms is not None  # the model was measured as ever
    split = baseline.pipeline
    assert split is not None and not split.measured
    assert split.error == "decode raised ValueError: cannot decode this request"
    assert split.fix.startswith("fix decode")
    assert any(w.startswith("--pipeline with the original model: decode raised ValueError")
               for w in session.results.warnings)
    assert any(e.kind == "warning" and "no end-to-end split with the original model" in e.message for e in events)
    session.decide()
    answer = next(a for a in session.answers if a.id == "cpu.preprocessing")
    assert answer.status == AnswerStatus.ASK_USER
    assert "decode raised ValueError: cannot decode this request" in answer.evidence
    # The candidates' table starts from the baseline, which carries the failed split as it is.
    assert session.results.candidates[0].pipeline == split
