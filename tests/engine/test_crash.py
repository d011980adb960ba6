"""An engine that dies mid-step (SIGKILL, SIGSEGV) or is hung up on (SIGHUP): the client says how and during
what, and results.json keeps what was measured."""

from __future__ import annotations

import os
import signal
import time

import pytest
from engine_support import WAIT_S, Background, descendants, end_processes, spawn

from planner.engine import protocol as wire
from planner.engine.client import EngineDiedError
from planner.errors import PlannerError
from planner.results import RESULTS_NAME, read_results

pytestmark = pytest.mark.worker  # each test measures demo:tiny in real worker processes


def _open(engine, out) -> None:
    engine.request(wire.Open(model="demo:tiny", target="cpu", out=str(out)))


def _kill_during(engine, step: Background, signum: int) -> None:
    """Send `signum` to the engine while `step` runs; end whatever the engine had started, once it is dead."""
    workers = descendants(engine.process.pid)
    os.kill(engine.process.pid, signum)
    try:
        step.join(30)
    finally:
        end_processes(workers)


def _assert_died_of(engine, step: Background, signal_name: str, step_name: str) -> EngineDiedError:
    error = step.error
    assert isinstance(error, EngineDiedError), step.reply
    assert error.signal_name == signal_name and error.returncode == -getattr(signal, signal_name)
    assert signal_name in error.problem and step_name in error.problem
    assert error.fix
    assert engine.deaths == [error]  # on_death heard it once, with the same words
    assert not engine.alive
    with pytest.raises(EngineDiedError):  # a later command fails at once, with the same death
        engine.request(wire.Detect())
    return error


def test_sigkill_mid_optimize_keeps_the_candidates_measured(tmp_path):
    out = tmp_path / "out"
    engine = spawn(tmp_path)
    try:
        _open(engine, out)
        engine.request(wire.Profile(quick=True))
        engine.request(wire.Decide())
        optimize = Background(engine, wire.Optimize(plugins=["cpu.onnxruntime"]))
        measured = optimize.wait_for(lambda e: e.kind == "candidate_done")
        _kill_during(engine, optimize, signal.SIGKILL)
        _assert_died_of(engine, optimize, "SIGKILL", "optimize")
    finally:
        engine.close()
    results = read_results(out / RESULTS_NAME)  # written before the kill, still whole
    labels = [c.label for c in results.candidates]
    assert results.candidates[0].is_reference and results.baseline is not None
    assert measured.data["label"] in labels


def test_sigsegv_mid_profile_keeps_results_json(tmp_path):
    out = tmp_path / "out"
    engine = spawn(tmp_path)
    try:
        _open(engine, out)
        engine.request(wire.Save())
        profile = Background(engine, wire.Profile(quick=True))
        profile.wait_for(lambda e: "timing the baseline" in e.message)
        _kill_during(engine, profile, signal.SIGSEGV)
        _assert_died_of(engine, profile, "SIGSEGV", "profile")
    finally:
        engine.close()
    results = read_results(out / RESULTS_NAME)
    assert results.model is not None and results.model.name == "tiny" and results.baseline is None


def test_sighup_mid_profile_writes_interrupted_results_and_says_bye(tmp_path):
    out = tmp_path / "out"
    engine = spawn(tmp_path)
    try:
        _open(engine, out)
        profile = Background(engine, wire.Profile(quick=True))
        profile.wait_for(lambda e: "timing the baseline" in e.message)
        hung_up = time.monotonic()
        os.kill(engine.process.pid, signal.SIGHUP)
        assert engine.process.wait(timeout=WAIT_S) == 0  # a clean exit, not a crash at interpreter shutdown
        stopped_s = time.monotonic() - hung_up
        profile.join(10)
    finally:
        engine.close()
    assert stopped_s < 10, f"the engine took {stopped_s:.1f} s to stop after SIGHUP"
    # The waiting step is answered (it was stopped), then the engine says goodbye.
    assert isinstance(profile.error, PlannerError) and not isinstance(profile.error, EngineDiedError), profile.error
    # Cancelled at its next safe point, or (on a loaded machine) answered for when it would not stop in time.
    assert "cancelled" in profile.error.problem or "stopped before it finished" in profile.error.problem
    assert engine.bye is not None and engine.death is None and engine.deaths == []
    assert engine.bye.status == "interrupted" and "SIGHUP" in engine.bye.reason
    results = read_results(out / RESULTS_NAME)
    assert results.status == "interrupted" and results.model is not None and results.model.name == "tiny"
