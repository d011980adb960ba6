"""Interleaved timing: leaders timed in alternating turns in their own workers, each failure kept to its own entry.

Also the Conversation worker it is built on: state kept between requests, failures and cancels stop the child.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any, Callable

import conversation_targets as targets
import pytest

from planner.events import CancelToken
from planner.hardware import detect
from planner.measure.evaluate import MeasureJob
from planner.measure.interleave import InterleaveStop, time_interleaved
from planner.measure.timer import MeasureSettings
from planner.measure.worker import Conversation, WorkerStatus
from planner.pipeline.baseline import baseline_spec_for
from planner.plugins import CandidateSpec, ModelRef, PlanContext, get_plugin

pytestmark = pytest.mark.worker

FIXTURE_PLUGINS = str(Path(__file__).resolve().parents[1] / "fixtures" / "plugins")

# Small caps keep every test to seconds. A target of 0 leaves the caps to decide, except for a candidate
# so fast that the clock cannot tell its calls apart (an interval of exactly 0).
SHORT = MeasureSettings(warmup_count=2, warmup_s=0.0, min_samples=8, max_samples=100_000,
                        min_time_s=0.2, max_time_s=0.6, target_rel_ci=0.0)
LONG = dataclasses.replace(SHORT, max_time_s=60.0)


@pytest.fixture(scope="module")
def jobs(tiny, tmp_path_factory) -> dict[str, MeasureJob]:
    """demo:tiny as PyTorch eager (the baseline) and as an ONNX Runtime session on one thread."""
    hw = detect()
    # The full list: a quick plan's ONNX Runtime settings have no one-thread session.
    ctx = PlanContext(hw=hw, model=tiny, workdir=tmp_path_factory.mktemp("interleave"), quick=False)
    ort = next(s for s in get_plugin("cpu.onnxruntime").candidates(ctx) if s.threads == 1)
    ref = ModelRef.of(tiny)
    return {"eager": MeasureJob(model=ref, spec=baseline_spec_for(tiny, hw)), "ort": MeasureJob(model=ref, spec=ort)}


def _fixture_job(job: MeasureJob, plugin: str) -> MeasureJob:
    """A job for one of tests/fixtures/plugins' misbehaving plugins, registered in the worker only."""
    return dataclasses.replace(job, spec=CandidateSpec(plugin=f"test.{plugin.lower()}", label=plugin),
                               env={"PLANNER_PLUGINS": f"plan_test_plugins:{plugin}Plugin"})


def _no_workers_left() -> bool:
    return not multiprocessing.active_children()


def test_two_candidates_are_timed_in_alternating_turns(jobs) -> None:
    """Eager PyTorch and ONNX Runtime each get stats from several turns, in A B, B A order, never overlapping."""
    eager, ort = time_interleaved([jobs["eager"], jobs["ort"]], settings=SHORT, timeout_s=120, block_s=0.15)
    for outcome in (eager, ort):
        assert outcome.ok, outcome.reason
        assert outcome.stats is not None and outcome.stats.samples >= SHORT.min_samples
        assert outcome.stats.samples == len(outcome.samples_ms) == sum(b.samples for b in outcome.blocks)
        assert outcome.stats.p50_ms > 0
        assert outcome.stopped_by in (InterleaveStop.TIME_CAP, InterleaveStop.CI)
        assert outcome.rounds == len(outcome.blocks) >= 2
        assert outcome.info["timer"].startswith("host clock")
    assert eager.label == jobs["eager"].spec.label and ort.label == jobs["ort"].spec.label
    assert ort.info["intra_op_threads"] == 1
    # The order flips every round: first in round 0, second in round 1, ...
    assert [b.position for b in eager.blocks] == [r % 2 for r in range(eager.rounds)]
    assert [b.position for b in ort.blocks] == [1 - r % 2 for r in range(ort.rounds)]
    # The workers' own clocks agree: turns never overlap, and they come A B B A A B ...
    turns = sorted([(b.started_s, b.wall_s, "eager") for b in eager.blocks]
                   + [(b.started_s, b.wall_s, "ort") for b in ort.blocks])
    assert [who for _, _, who in turns][:4] == ["eager", "ort", "ort", "eager"]
    for (start, wall, _), (next_start, _, _) in zip(turns, turns[1:]):
        assert start + wall <= next_start
    assert _no_workers_left()


def test_timing_stops_once_every_interval_is_tight(jobs) -> None:
    """With a loose target the rounds end as soon as min_samples and min_time_s are in, far from a 60 s cap."""
    loose = dataclasses.replace(LONG, target_rel_ci=0.5)
    (ort,) = time_interleaved([jobs["ort"]], settings=loose, timeout_s=120, block_s=0.1)
    assert ort.ok and ort.stopped_by is InterleaveStop.CI, ort.reason
    assert ort.stats is not None and ort.stats.ci95_rel <= 0.5 and ort.stats.samples >= loose.min_samples
    assert ort.rounds <= 3  # min_time_s of 0.2 s takes two turns of 0.1 s plus their re-warm, not 600 turns


def test_a_candidate_that_fails_or_crashes_on_open_fails_alone(jobs, tmp_path) -> None:
    """A missing model file and a native abort each fail their own entry with a plain reason; the other is timed."""
    missing = str(tmp_path / "gone.onnx")
    spec = jobs["ort"].spec
    broken = dataclasses.replace(jobs["ort"], spec=dataclasses.replace(spec, label="broken",
                                                                       artifacts={**spec.artifacts, "onnx": missing}))
    crash = _fixture_job(jobs["ort"], "Crash")
    good, failed, crashed = time_interleaved([jobs["ort"], broken, crash], settings=SHORT, timeout_s=120,
                                             block_s=0.1, sys_path=[FIXTURE_PLUGINS])
    assert good.ok and good.stats is not None and good.stats.samples >= SHORT.min_samples, good.reason
    assert good.rounds >= 2 and {b.position for b in good.blocks} == {0}  # alone in every round
    assert failed.status is WorkerStatus.FAILED and not failed.ok
    assert failed.stopped_by is InterleaveStop.FAILED and failed.stats is None and failed.rounds == 0
    assert "gone.onnx" in failed.reason and "Traceback" in failed.traceback
    assert crashed.status is WorkerStatus.CRASHED and "SIGABRT" in crashed.reason
    assert _no_workers_left()


def test_a_hanging_candidate_times_out_alone(jobs) -> None:
    """A candidate whose open never returns times out with a plain reason; the other is timed after it."""
    hang = _fixture_job(jobs["ort"], "Hang")
    # The hanging worker waits out the whole start-up timeout, so it is kept short; the good one-thread ONNX Runtime
    # worker opens and warms up in well under a second here, started beside the hanging one.
    good, hung = time_interleaved([jobs["ort"], hang], settings=SHORT, timeout_s=5, block_s=0.1,
                                  sys_path=[FIXTURE_PLUGINS])
    assert good.ok and good.stats is not None and good.stats.samples >= SHORT.min_samples, good.reason
    assert hung.status is WorkerStatus.TIMEOUT and hung.stats is None
    assert hung.reason == "did not open and warm up within 5 s; the candidate hung or is too slow here"
    assert _no_workers_left()


def test_cancel_stops_every_worker(jobs) -> None:
    """Cancelling while one candidate hangs and the other waits returns at once with both cancelled."""
    token = CancelToken()
    threading.Timer(3.0, token.cancel).start()
    started = time.monotonic()
    outcomes = time_interleaved([jobs["ort"], _fixture_job(jobs["ort"], "Hang")], settings=LONG, timeout_s=120,
                                cancel=token, sys_path=[FIXTURE_PLUGINS])
    assert time.monotonic() - started < 60  # far from the 120 s start-up timeout; not a timing claim
    assert [o.status for o in outcomes] == [WorkerStatus.CANCELLED] * 2
    assert all(o.stopped_by is InterleaveStop.CANCELLED and not o.ok for o in outcomes)
    assert _no_workers_left()


def test_keyboard_interrupt_stops_every_worker(jobs) -> None:
    """Ctrl-C while candidates are being timed stops every worker and reaches the caller."""
    deadline = time.monotonic() + 5.0

    def interrupt() -> bool:
        if time.monotonic() > deadline:
            raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        # Eager PyTorch's calls take long enough that its interval never reaches 0: the rounds go on until interrupted.
        time_interleaved([jobs["eager"], jobs["ort"]], settings=LONG, timeout_s=120, cancel=interrupt, block_s=0.1)
    assert _no_workers_left()


def test_conversation_keeps_state_and_ends_on_failure() -> None:
    """A worker answers requests from the state it keeps; an error ends it with the reason and stops the child."""
    with Conversation(targets.counter, 10) as conversation:
        conversation.start()
        assert conversation.wait_ready(timeout_s=60).ok
        assert [conversation.ask(n, timeout_s=30).value for n in (1, 2, 3)] == [11, 13, 16]
        failed = conversation.ask("raise", timeout_s=30)
        assert failed.status is WorkerStatus.FAILED and failed.reason == "ValueError: asked to fail"
        assert conversation.ask(1, timeout_s=30) is failed  # the conversation is over
    assert _no_workers_left()


def test_conversation_factory_failure_and_bad_targets() -> None:
    """A factory that raises is a failure on start-up; a nested function cannot be started in a child at all."""
    with Conversation(targets.refuse, "no session today") as conversation:
        conversation.start()
        outcome = conversation.wait_ready(timeout_s=60)
    assert outcome.status is WorkerStatus.FAILED and outcome.reason == "RuntimeError: no session today"
    def nested(start: int) -> Callable[[Any], Any]:
        return targets.counter(start)

    with pytest.raises(TypeError):
        Conversation(nested, 1)
    assert _no_workers_left()
