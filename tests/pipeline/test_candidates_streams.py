"""The candidates step asks for parallel streams in a quick run only when the user stated a minimum throughput."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.events import CancelToken
from planner.models import load_model
from planner.plugins import CandidateSpec
from planner.results import CandidateResult, Status


@pytest.mark.parametrize(("quick", "stated", "expected"), [(True, False, False), (True, True, True),
                                                            (False, False, True)])
def test_streams_follow_the_sweep_or_a_stated_throughput(monkeypatch, tmp_path: Path, quick: bool, stated: bool,
                                                         expected: bool) -> None:
    import planner.measure.evaluate as evaluate
    from planner.pipeline.candidates import CandidateRun

    jobs = []

    def fake_measure(job, *, timeout_s):
        jobs.append(job)
        return CandidateResult(plugin="x", label="x", config={}, precision="fp32", status=Status.FAILED), None

    monkeypatch.setattr(evaluate, "measure", fake_measure)
    run = CandidateRun(hw=None, model=load_model("demo:tiny"), baseline=None, reference=[],  # type: ignore[arg-type]
                       workdir=tmp_path, quick=quick, val_data=None, accuracy_budget=None,
                       on_event=lambda e: None, cancel=CancelToken(), sink=None,  # type: ignore[arg-type]
                       streams=stated)
    run._measure(CandidateSpec(plugin="cpu.onnxruntime"), None, timeout_s=10)
    assert jobs[0].measures_streams is expected
