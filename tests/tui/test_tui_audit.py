"""The Results step's candidate detail carries one line on the conditions it was measured under."""

from __future__ import annotations

from tui_support import typed_candidate

from planner.results import CandidateResult, to_data
from planner.results.audit import MeasurementAudit, judged
from planner.tui.screens.results import candidate_detail


def _candidate(load: float | None) -> CandidateResult:
    c = {"label": "ort 2t", "plugin": "cpu.onnxruntime", "precision": "fp32", "status": "ok"}
    if load is not None:
        c["audit"] = to_data(judged(MeasurementAudit(window_s=2.0, load_samples=9, other_load_mean_cores=load,
                                                     other_load_peak_cores=load)))
    return typed_candidate(c)


def test_a_disturbed_candidate_says_so_with_what_to_do() -> None:
    text = candidate_detail(_candidate(0.9), 1).plain
    assert "environment: taken under interference: other processes used 90% of a core" in text
    assert "re-run on an idle machine" in text


def test_a_quiet_candidate_says_nothing_was_seen_and_an_old_one_is_silent() -> None:
    assert "environment: no interference seen; other processes used 1% of a core" in candidate_detail(
        _candidate(0.01), 1).plain
    assert "environment:" not in candidate_detail(_candidate(None), 1).plain
