"""planner.measure.streams: rows/s one request at a time and with a runtime's parallel streams.

Fake runs make the counting exact; the real ONNX Runtime and OpenVINO modes are tested beside their
sessions (tests/targets/test_cpu_parallel_streams.py). No timed assertions: only what was counted.
"""

from __future__ import annotations

import threading

import pytest

from planner.measure.evaluate import MeasureJob
from planner.measure.streams import (
    ParallelRuns,
    ThreadedRuns,
    measure_streams,
    rows_per_second,
    split_threads,
)
from planner.plugins import CandidateSpec, ModelRef


class _CountingSession:
    """A session whose run only counts calls (from any thread)."""

    def __init__(self, parallel=None) -> None:
        self.calls = 0
        self._lock = threading.Lock()
        self._parallel = parallel

    def run(self, prepared):
        with self._lock:
            self.calls += 1
        return prepared

    def parallel_runs(self):
        return self._parallel


def test_split_threads_gives_each_stream_its_share() -> None:
    assert split_threads(1) == (1, 1)
    assert split_threads(2) == (2, 1)
    assert split_threads(4) == (4, 1)
    assert split_threads(16) == (8, 2)


def test_threaded_runs_count_every_completed_call() -> None:
    sessions = [_CountingSession(), _CountingSession()]
    runs = ThreadedRuns([s.run for s in sessions], "two fakes")
    assert isinstance(runs, ParallelRuns) and runs.streams == 2
    durations = runs.run_for("x", 0.05)
    assert len(durations) == sessions[0].calls + sessions[1].calls and sessions[0].calls > 0 and sessions[1].calls > 0
    assert all(d >= 0 for d in durations)


def test_a_failing_run_is_raised_in_the_caller() -> None:
    def broken(_):
        raise ValueError("shape mismatch")

    with pytest.raises(ValueError, match="shape mismatch"):
        ThreadedRuns([broken, broken], "broken").run_for("x", 0.05)
    with pytest.raises(ValueError):
        rows_per_second(ThreadedRuns([broken], "broken"), "x", 4)


def test_rows_per_second_counts_rows_and_streams_by_the_median_call() -> None:
    class Fixed:
        """Parallel runs whose every call takes 2 ms: 4 streams of 8 rows make 16,000 rows/s by the median."""

        streams, basis = 4, "fixed"

        def run_for(self, prepared, seconds):
            return [0.002] * 10

    by_median, counted = rows_per_second(Fixed(), "x", 8, quick=True)
    assert by_median == 4 * 8 / 0.002
    assert counted > 0  # counted over wall time, whatever this machine takes


def test_a_session_without_a_parallel_mode_is_not_measured() -> None:
    class Plain:
        def run(self, prepared):
            return prepared

    assert measure_streams(Plain(), "x", batch=1) is None


def test_a_sentence_instead_of_streams_is_the_reason() -> None:
    result = measure_streams(_CountingSession("1 thread: no room for parallel sessions"), "x", batch=4)
    assert result is not None and result.points == ()
    assert result.skipped == "1 thread: no room for parallel sessions"


def test_one_stream_then_the_runtime_streams_at_the_batch_given() -> None:
    session = _CountingSession()
    session._parallel = ThreadedRuns([_CountingSession().run for _ in range(3)], "three fake sessions")
    result = measure_streams(session, "x", batch=8, quick=True)
    assert result is not None and result.skipped == ""
    one, many = result.points
    assert (one.batch, one.streams) == (8, 1) and "one request at a time" in one.basis
    assert (many.batch, many.streams, many.basis) == (8, 3, "three fake sessions")
    assert one.samples_per_s > 0 and many.samples_per_s > 0
    assert one.sustained_per_s and many.sustained_per_s


def test_a_runtime_that_cannot_open_its_streams_is_a_note_not_a_failure() -> None:
    class Failing(_CountingSession):
        def parallel_runs(self):
            raise RuntimeError("out of streams\nsecond line")

    result = measure_streams(Failing(), "x", batch=1)
    assert result is not None and result.points == ()
    assert result.skipped == "parallel streams could not be opened: RuntimeError: out of streams"


def test_streams_come_with_the_batch_sweep_unless_asked() -> None:
    from planner.models import load_model

    job = MeasureJob(model=ModelRef.of(load_model("demo:tiny")), spec=CandidateSpec(plugin="cpu.onnxruntime"))
    assert not job.measures_streams  # no sweep: a quick screen
    swept = MeasureJob(model=job.model, spec=job.spec, sweep_max_batch=8)
    assert swept.measures_streams
    assert MeasureJob(model=job.model, spec=job.spec, streams=True).measures_streams
    assert not MeasureJob(model=job.model, spec=job.spec, sweep_max_batch=8, streams=False).measures_streams
