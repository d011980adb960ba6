"""run_isolated: values come back, exceptions fail, crashes and hangs are contained, env applies.

Also which timer the worker picks for a session (CUDA events for GPU sessions).
"""

from __future__ import annotations

import os
import signal
import time

import measure_worker_targets as targets
import numpy as np
import pytest

from planner.measure import WorkerStatus, run_isolated


def _gone(pid: int | None) -> bool:
    assert pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.worker
def test_returns_value_with_args_and_kwargs() -> None:
    """Positional and keyword arguments reach the target and its value comes back."""
    outcome = run_isolated(targets.add, 2, 3, scale=10, timeout_s=60)
    assert outcome.status == WorkerStatus.OK == "ok"
    assert outcome.ok
    assert outcome.value == 50
    assert outcome.reason == "" and outcome.traceback == ""
    assert outcome.wall_s > 0


@pytest.mark.worker
def test_large_numpy_return_value() -> None:
    """A 4 MB array crosses the pipe intact (received before join, so no deadlock)."""
    outcome = run_isolated(targets.big_array, 4 * 1024 * 1024, timeout_s=60)
    assert outcome.status == WorkerStatus.OK, outcome.reason
    assert isinstance(outcome.value, np.ndarray)
    assert outcome.value.nbytes == 4 * 1024 * 1024
    np.testing.assert_array_equal(outcome.value[:5], [0, 1, 2, 3, 4])


@pytest.mark.worker
def test_exception_becomes_failed() -> None:
    """An exception in the worker is reported with its type, message and traceback."""
    outcome = run_isolated(targets.raise_type_error, "bad operand", timeout_s=60)
    assert outcome.status == WorkerStatus.FAILED
    assert outcome.reason == "TypeError: bad operand"
    assert "Traceback" in outcome.traceback and "raise_type_error" in outcome.traceback
    assert outcome.value is None


@pytest.mark.worker
def test_unpicklable_result_becomes_failed() -> None:
    """A value that cannot travel back is a failure with a clear reason, not a hang."""
    outcome = run_isolated(targets.unpicklable_result, timeout_s=60)
    assert outcome.status == WorkerStatus.FAILED
    assert "could not be pickled" in outcome.reason


@pytest.mark.worker
def test_abort_becomes_crashed() -> None:
    """A native abort is contained and named."""
    outcome = run_isolated(targets.abort, timeout_s=60)
    assert outcome.status == WorkerStatus.CRASHED
    assert "SIGABRT" in outcome.reason
    assert _gone(outcome.pid)


@pytest.mark.worker
def test_exit_without_result_becomes_crashed() -> None:
    """A worker that exits without returning is reported with its exit code."""
    outcome = run_isolated(targets.exit_code, 3, timeout_s=60)
    assert outcome.status == WorkerStatus.CRASHED
    assert "code 3" in outcome.reason


@pytest.mark.worker
def test_timeout_stops_the_process() -> None:
    """A worker past its timeout is terminated and reaped."""
    started = time.monotonic()
    outcome = run_isolated(targets.sleep, 60, timeout_s=2)
    assert outcome.status == WorkerStatus.TIMEOUT
    assert outcome.reason == "did not finish within 2 s"
    assert time.monotonic() - started < 50  # far from the 60 s sleep; not a timing benchmark
    assert _gone(outcome.pid)


@pytest.mark.worker
def test_env_is_applied_in_child() -> None:
    """The env mapping is set in the worker, not in the parent."""
    assert "PLANNER_TEST_VAR" not in os.environ
    outcome = run_isolated(targets.read_env, "PLANNER_TEST_VAR", timeout_s=60,
                           env={"PLANNER_TEST_VAR": "7", "OMP_NUM_THREADS": "1"})
    assert outcome.status == WorkerStatus.OK, outcome.reason
    assert outcome.value == "7"
    assert "PLANNER_TEST_VAR" not in os.environ


@pytest.mark.worker
def test_worker_starts_light() -> None:
    """The trampoline loads no numpy or torch before the env is applied and the target imported."""
    outcome = run_isolated(targets.loaded_modules, ["numpy", "torch"], timeout_s=60)
    assert outcome.status == WorkerStatus.OK, outcome.reason
    assert outcome.value == {"numpy": False, "torch": False}


def test_rejects_non_module_functions() -> None:
    """Lambdas and nested functions cannot be imported by the child."""
    with pytest.raises(TypeError):
        run_isolated(lambda: 1, timeout_s=5)


def test_crash_reason_hints() -> None:
    """Signals get their names and a hint; SIGKILL points at the OOM killer."""
    from planner.measure.worker import _crash_reason

    assert _crash_reason(-signal.SIGKILL) == "killed by SIGKILL: often the out-of-memory killer"
    assert "SIGSEGV" in _crash_reason(-signal.SIGSEGV)


@pytest.mark.worker
def test_keyboard_interrupt_stops_child_and_reraises() -> None:
    """Ctrl-C while waiting terminates the worker and propagates to the caller."""
    import multiprocessing

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.5)
        with pytest.raises(KeyboardInterrupt):
            run_isolated(targets.sleep, 60, timeout_s=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not any(p.name.startswith("isolated:") for p in multiprocessing.active_children())


class _Session:
    """A stand-in session carrying only what the timer choice reads."""

    def __init__(self, needs_sync: bool) -> None:
        self.needs_sync = needs_sync
        self.synced = 0

    def sync(self) -> None:
        self.synced += 1


def test_host_sessions_are_timed_by_the_host_clock() -> None:
    """A session that runs synchronously gets no hooks."""
    from planner.measure.timer import HOST_CLOCK, session_timer

    timer = session_timer(_Session(needs_sync=False))
    assert (timer.label, timer.sync, timer.event_timer) == (HOST_CLOCK, None, None)


def test_gpu_sessions_are_timed_with_cuda_events(monkeypatch) -> None:
    """A session that declares needs_sync gets CUDA events, and its own sync before clock reads."""
    import torch

    from planner.measure.timer import CUDA_EVENTS, HOST_CLOCK_SYNCED, session_timer

    session = _Session(needs_sync=True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    timer = session_timer(session)
    assert timer.label == CUDA_EVENTS
    assert timer.event_timer is not None
    timer.sync()
    assert session.synced == 1
    # Without CUDA there are no events to record: the session is still waited for.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    timer = session_timer(session)
    assert (timer.label, timer.event_timer) == (HOST_CLOCK_SYNCED, None)
    timer.sync()
    assert session.synced == 2


@pytest.mark.gpu
def test_cuda_event_timer_times_a_torch_cuda_session() -> None:
    """On a GPU, a CUDA TorchSession is timed by events and the samples are device milliseconds."""
    import torch

    from planner.measure import MeasureSettings, time_callable
    from planner.measure.timer import CUDA_EVENTS, session_timer
    from planner.pytorch.session import TorchSession

    session = TorchSession(torch.nn.Linear(512, 512), device="cuda")
    timer = session_timer(session)
    assert timer.label == CUDA_EVENTS
    pool = [session.prepare(np.random.default_rng(i).standard_normal((64, 512), dtype=np.float32))
            for i in range(3)]
    timing = time_callable(session.run, pool, settings=MeasureSettings.quick(), sync=timer.sync,
                           event_timer=timer.event_timer)
    assert timing.stats.p50_ms > 0
