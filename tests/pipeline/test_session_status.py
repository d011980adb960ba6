"""A finished plan's status says how its last run ended: cancelled runs are interrupted, failed candidates partial."""

from __future__ import annotations

import json

import pytest

from planner.events import CancelToken
from planner.pipeline import PlanSession
from planner.results import CandidateResult, Status


def _cand(label: str, status: Status = Status.OK) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=status, speedup=1.0)


@pytest.fixture
def session(tmp_path) -> PlanSession:
    """A session with measured candidates and an output folder (no baseline: finish writes results.json only)."""
    s = PlanSession()
    s.set_out_dir(tmp_path / "out")
    s.update(candidates=(_cand("baseline"), _cand("a candidate")))
    return s


def _saved_status(s: PlanSession) -> str:
    assert s.out_dir is not None
    return json.loads((s.out_dir / "results.json").read_text())["status"]


def test_a_run_cancelled_after_an_earlier_finish_is_interrupted(session) -> None:
    # The TUI finishes at every save: the first save of a complete run is ok...
    session.finish(write_report=False)
    assert _saved_status(session) == "ok"
    # ...then another optimize run is cancelled (the warning is what CandidateRun records) and saved again.
    session.cancel = CancelToken()
    session.cancel.cancel()
    session.warn("cancelled: 4 candidates not measured")
    session.finish(write_report=False)
    assert _saved_status(session) == "interrupted"
    # A later complete run (a fresh token, as the TUI gives each run) is ok again.
    session.cancel = CancelToken()
    session.finish(write_report=False)
    assert _saved_status(session) == "ok"


def test_a_failed_candidate_makes_the_plan_partial_and_an_explicit_status_wins(session) -> None:
    session.update(candidates=(*session.results.candidates, _cand("broken", Status.FAILED)))
    session.finish(write_report=False)
    assert _saved_status(session) == "partial"
    session.finish(status="interrupted", write_report=False)  # the headless Ctrl-C path names it
    assert _saved_status(session) == "interrupted"
