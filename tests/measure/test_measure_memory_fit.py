"""measure() sizes a worker to the memory free when it starts: a model larger than the limit is refused before any
worker, torch.compile's compiler processes are capped, and a compile that cannot fit is skipped with the reason."""

from __future__ import annotations

import signal

import pytest

from planner.errors import PlannerError
from planner.hardware import memory_limits
from planner.hardware.memory_limits import COMPILE_THREADS_VAR, PlanLimits
from planner.measure import evaluate, worker
from planner.measure.evaluate import MeasureJob, fitted_env, measure
from planner.models.spec import ModelInputs, TensorSpec
from planner.plugins import CandidateSpec, ModelRef
from planner.results import Status

GIB, MIB = 1 << 30, 1 << 20
MODEL = ModelRef("demo:tiny", ModelInputs((TensorSpec(name="x", shape=(1, 3, 8, 8)),)))


def _job(*, weights: int = 5 * MIB, env: dict | None = None, device: str = "cpu") -> MeasureJob:
    spec = CandidateSpec(plugin="cpu.torch", label="torch cpu fp32 2t compile",
                         config={"device": device, "compile": "default", "env": env or {}})
    return MeasureJob(model=MODEL, spec=spec, quick=True, env=dict(env or {}), weights_bytes=weights)


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch):
    """Set the limits measure() reads live; returns a setter."""

    def use(limit: int, available: int, cores: int = 2) -> None:
        monkeypatch.setattr(memory_limits, "current_limits",
                            lambda root=None: PlanLimits(limit, "cgroup v1", available, cores))

    return use


@pytest.fixture
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if measure() starts a worker."""

    def refuse(*args, **kwargs):
        raise AssertionError("a worker was started")

    _replace_run_isolated(monkeypatch, refuse)


def _replace_run_isolated(monkeypatch: pytest.MonkeyPatch, fake) -> None:
    """measure() takes run_isolated from planner.measure, which keeps it once loaded (PEP 562): patch both."""
    import planner.measure

    monkeypatch.setattr(worker, "run_isolated", fake)
    monkeypatch.setattr(planner.measure, "run_isolated", fake, raising=False)


def test_a_model_larger_than_the_limit_fails_before_any_worker(limits, no_worker) -> None:
    limits(2 * GIB, int(1.5 * GIB))
    with pytest.raises(PlannerError) as raised:
        measure(_job(weights=3 * GIB), timeout_s=10)
    assert "3 GiB" in raised.value.problem and "2 GiB memory limit (cgroup v1)" in raised.value.problem
    assert raised.value.fix


def test_compile_processes_are_capped_to_the_cores_and_the_plugins_setting(limits, monkeypatch) -> None:
    monkeypatch.delenv(COMPILE_THREADS_VAR, raising=False)
    limits(8 * GIB, 6 * GIB, cores=4)
    env, why = fitted_env(_job(env={COMPILE_THREADS_VAR: "20", "OMP_NUM_THREADS": "4"}))
    assert (env, why) == ({COMPILE_THREADS_VAR: "4", "OMP_NUM_THREADS": "4"}, "")
    env, _ = fitted_env(_job(env={COMPILE_THREADS_VAR: "2"}))
    assert env[COMPILE_THREADS_VAR] == "2"
    # The user's own setting is lower still: it wins.
    monkeypatch.setenv(COMPILE_THREADS_VAR, "1")
    assert fitted_env(_job(env={COMPILE_THREADS_VAR: "4"}))[0][COMPILE_THREADS_VAR] == "1"


def test_the_memory_free_now_lowers_the_count(limits, monkeypatch) -> None:
    monkeypatch.delenv(COMPILE_THREADS_VAR, raising=False)
    limits(3 * GIB, int(1.7 * GIB), cores=4)
    env, why = fitted_env(_job(env={COMPILE_THREADS_VAR: "4"}))
    assert why == "" and env[COMPILE_THREADS_VAR] == "1"


def test_a_job_that_does_not_compile_is_left_alone(limits) -> None:
    limits(2 * GIB, 100 * MIB)
    job = _job()
    assert fitted_env(job) == ({}, "")


def test_a_compile_that_cannot_fit_is_skipped_with_the_reason(limits, no_worker) -> None:
    limits(2 * GIB, int(1.2 * GIB))
    result, outputs = measure(_job(env={COMPILE_THREADS_VAR: "2"}), timeout_s=10)
    assert outputs is None and result.status is Status.SKIPPED
    assert result.reason.startswith("not measured: torch.compile needs about 520 MiB per C++ compiler process")
    assert "1.2 GiB available under a 2 GiB memory limit (cgroup v1)" in result.reason


def test_measure_records_the_trees_peak(limits, monkeypatch) -> None:
    limits(8 * GIB, 6 * GIB)
    failed = worker.WorkerOutcome(worker.WorkerStatus.CRASHED, None, "killed by SIGKILL", "", 0.1, 1)
    _replace_run_isolated(monkeypatch, lambda *a, **k: failed)
    result, _ = measure(_job(), timeout_s=10)
    assert result.status is Status.FAILED
    assert result.tree_peak_bytes is not None and result.tree_peak_bytes > 0


def test_a_sigkill_counted_by_the_cgroup_is_named_the_oom_killer(monkeypatch) -> None:
    monkeypatch.setattr(worker, "_oom_count", lambda: (3, 2 * GIB))
    reason = worker._crash_reason(-signal.SIGKILL, (2, 2 * GIB))
    assert reason == ("killed by SIGKILL: the out-of-memory killer (the kill count of the cgroup that limits the "
                      "planner to 2 GiB rose while it ran)")
    # No rise: not proven, so the hint stays a hint.
    assert worker._crash_reason(-signal.SIGKILL, (3, 2 * GIB)) == "killed by SIGKILL: often the out-of-memory killer"


def test_evaluate_reads_limits_through_the_module(monkeypatch) -> None:
    """fitted_env reads current_limits at call time (so a plan's growth since detection counts)."""
    calls = []
    monkeypatch.setattr(memory_limits, "current_limits",
                        lambda root=None: calls.append(1) or PlanLimits(None, "RAM", None, 1))
    evaluate.fitted_env(_job())
    assert calls == [1]
