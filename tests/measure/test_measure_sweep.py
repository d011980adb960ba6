"""Throughput sweeps with fake work: the knee, out-of-memory stops and the memory budget."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest
from measure_clock import FakeClock

from planner.codec import to_data
from planner.measure import (
    MeasureSettings,
    SweepStop,
    ThroughputPoint,
    find_knee,
    throughput_sweep,
)
from planner.measure.sweep import batch_sizes, is_out_of_memory

SETTINGS = MeasureSettings(warmup_count=2, warmup_s=0.0, min_samples=10, max_samples=200,
                           min_time_s=0.0, max_time_s=5.0)


def latency_ms(batch: int) -> float:
    """Fixed overhead plus per-item cost up to 8 items; beyond that the device is saturated."""
    return 4.0 + (0.5 * batch if batch <= 8 else 0.5 * 8 + 1.0 * (batch - 8))


def make_runner(clock: FakeClock, *, oom_at: int | None = None, oom_in_setup: bool = False,
                error: type[BaseException] = MemoryError,
                message: str = "out of memory") -> Callable[[int], tuple[Callable[[Any], Any], Sequence[Any]]]:
    """A fake ``run_for_batch`` whose cost grows with the batch and that fails at ``oom_at``."""
    def run_for_batch(batch: int) -> tuple[Callable[[Any], Any], Sequence[Any]]:
        if oom_at is not None and batch >= oom_at and oom_in_setup:
            raise error(message)

        def run(_: Any) -> None:
            if oom_at is not None and batch >= oom_at:
                raise error(message)
            clock.now += int(latency_ms(batch) * 1e6)

        return run, [batch] * 3

    return run_for_batch


def test_sweep_completes_and_finds_knee(clock: FakeClock) -> None:
    """Throughput grows until batch 8 and flattens after, so the knee is 8."""
    sweep = throughput_sweep(make_runner(clock), max_batch=64, settings=SETTINGS)
    assert [p.batch for p in sweep.points] == [1, 2, 4, 8, 16, 32, 64]
    assert sweep.stop == SweepStop.COMPLETED
    assert "max_batch" in sweep.stopped_reason
    p1 = sweep.points[0]
    assert p1.latency_p50_ms == pytest.approx(4.5)
    assert p1.samples_per_s == pytest.approx(1000 / 4.5)
    # 8 -> 1000*8/8 = 1000/s; 16 -> 16000/16 = 1000/s, 64 -> 64000/64 = 1000/s: no later gain > 10%.
    assert sweep.knee_batch == 8


def test_oom_during_run_stops_sweep(clock: FakeClock) -> None:
    """An out-of-memory error while running a batch ends the sweep with that reason."""
    sweep = throughput_sweep(make_runner(clock, oom_at=16), max_batch=64, settings=SETTINGS)
    assert [p.batch for p in sweep.points] == [1, 2, 4, 8]
    assert sweep.stop == SweepStop.OUT_OF_MEMORY
    assert "batch 16" in sweep.stopped_reason and "out of memory" in sweep.stopped_reason
    # Still growing at the last batch measured: no knee within the sweep.
    assert sweep.knee_batch is None


def test_oom_during_setup_stops_sweep(clock: FakeClock) -> None:
    """An allocation failure while building a batch (e.g. onnxruntime's arena) also ends it."""
    runner = make_runner(clock, oom_at=4, oom_in_setup=True, error=RuntimeError,
                         message="[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory")
    sweep = throughput_sweep(runner, max_batch=64, settings=SETTINGS)
    assert [p.batch for p in sweep.points] == [1, 2]
    assert sweep.stop == SweepStop.OUT_OF_MEMORY
    assert "RuntimeError" in sweep.stopped_reason


def test_torch_oom_type(clock: FakeClock) -> None:
    """torch.OutOfMemoryError is recognized by type."""
    import torch

    runner = make_runner(clock, oom_at=2, error=torch.OutOfMemoryError, message="CUDA error")
    sweep = throughput_sweep(runner, max_batch=8, settings=SETTINGS)
    assert sweep.stop == SweepStop.OUT_OF_MEMORY
    assert [p.batch for p in sweep.points] == [1]


def test_other_errors_end_the_sweep_with_their_reason(clock: FakeClock) -> None:
    """A runtime that rejects a larger batch (a fixed-batch graph) ends the sweep there, saying why."""
    runner = make_runner(clock, oom_at=4, error=ValueError, message="shape mismatch\nmore detail")
    sweep = throughput_sweep(runner, max_batch=8, settings=SETTINGS)
    assert sweep.stop == SweepStop.FAILED
    assert [p.batch for p in sweep.points] == [1, 2]
    assert sweep.stopped_reason == "batch 4 failed: ValueError: shape mismatch"


def test_memory_budget_stops_sweep(clock: FakeClock) -> None:
    """A batch whose peak exceeds the budget ends the sweep and is left out of the points."""
    current = [0]
    resets = [0]
    runner = make_runner(clock)

    def run_for_batch(batch: int) -> tuple[Callable[[Any], Any], Sequence[Any]]:
        current[0] = 1_000_000 * batch
        return runner(batch)

    def reset() -> None:
        resets[0] += 1

    sweep = throughput_sweep(run_for_batch, max_batch=64, memory_budget_bytes=10_000_000,
                             settings=SETTINGS, memory_probe=lambda: current[0], memory_reset=reset)
    assert [p.batch for p in sweep.points] == [1, 2, 4, 8]
    assert [p.peak_memory_bytes for p in sweep.points] == [1_000_000, 2_000_000, 4_000_000, 8_000_000]
    assert sweep.stop == SweepStop.MEMORY_BUDGET
    assert "batch 16" in sweep.stopped_reason and "budget" in sweep.stopped_reason
    assert resets[0] == 5
    assert to_data(sweep)["points"][0]["batch"] == 1


def test_knee_rule() -> None:
    """The knee is the first batch no later batch beats by more than 10%."""
    def pts(rates: list[float]) -> list[ThroughputPoint]:
        return [ThroughputPoint(2 ** i, 1.0, r, None) for i, r in enumerate(rates)]

    assert find_knee(pts([100, 180, 300, 320, 310])) == 4
    # A dip followed by renewed growth does not end the search early.
    assert find_knee(pts([100, 105, 200, 210])) == 4
    assert find_knee(pts([100, 200, 400])) is None
    assert find_knee(pts([100])) is None
    assert find_knee(pts([100, 90])) == 1


def test_batch_sizes() -> None:
    """Powers of two, ending with max_batch."""
    assert batch_sizes(64) == [1, 2, 4, 8, 16, 32, 64]
    assert batch_sizes(48) == [1, 2, 4, 8, 16, 32, 48]
    assert batch_sizes(1) == [1]


def test_is_out_of_memory_messages() -> None:
    """Common allocation-failure texts from torch, onnxruntime and OpenVINO are recognized."""
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(RuntimeError("Exception from src/inference: std::bad_alloc"))
    assert is_out_of_memory(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_out_of_memory(outer)


def test_sweep_stops_before_a_batch_estimated_not_to_fit(clock: FakeClock) -> None:
    """A batch whose memory estimate exceeds the limit is never built: the sweep says so and keeps the rest."""
    built: list[int] = []
    runner = make_runner(clock)

    def run_for_batch(batch: int):
        built.append(batch)
        return runner(batch)

    sweep = throughput_sweep(run_for_batch, max_batch=64, settings=SETTINGS,
                             estimate_bytes=lambda b: b * 100 * 2**20, memory_limit_bytes=1000 * 2**20,
                             estimate_basis="estimate: inputs plus activations")
    assert built == [1, 2, 4, 8]
    assert [p.batch for p in sweep.points] == [1, 2, 4, 8]
    assert sweep.stop == SweepStop.MEMORY_ESTIMATE
    assert "stopped before batch 16" in sweep.stopped_reason
    assert "1.56 GiB" in sweep.stopped_reason and "1,000 MiB" in sweep.stopped_reason
    assert "nothing was allocated" in sweep.stopped_reason


def test_a_time_limit_stops_before_a_batch_that_would_overrun_it(clock: FakeClock) -> None:
    """A quick sweep does not start a batch whose warm-up and minimum samples would end past its limit."""
    seconds = (lambda: clock.now / 1e9)  # noqa: E731 - the sweep's wall clock, on the fake work's time
    slow = make_runner(clock)

    def run_for_batch(batch: int):
        run, pool = slow(batch)

        def heavy(x):  # 100x the fake cost: batch 1 takes 0.45 s a call
            for _ in range(100):
                run(x)
        return heavy, pool

    sweep = throughput_sweep(run_for_batch, max_batch=64, settings=SETTINGS, time_limit_s=20.0, clock=seconds)
    # Batch 1: 12 calls (warm-up and minimum samples) x 0.45 s = 5.4 s; batch 2, estimated at 12 x 0.9 s, fits
    # and takes 12 x 0.5 s = 6 s; batch 4, estimated at 12 x 1.0 s = 12 s, would end at 23.4 s, past 20 s.
    assert [p.batch for p in sweep.points] == [1, 2]
    assert sweep.stop == SweepStop.TIME_LIMIT
    assert sweep.stopped_reason.startswith("stopped before batch 4: timing it would take about 12 s")
    assert "past the 20 s this sweep may take" in sweep.stopped_reason


def test_a_batch_already_timed_is_taken_as_it_was(clock: FakeClock) -> None:
    """The main timing at the model's own batch is the sweep's point for it: that batch is not run again."""
    ran: list[int] = []
    runner = make_runner(clock)

    def run_for_batch(batch: int):
        ran.append(batch)
        return runner(batch)

    sweep = throughput_sweep(run_for_batch, max_batch=4, settings=SETTINGS, measured_p50_ms={1: 7.0})
    assert ran == [2, 4]
    assert sweep.points[0].batch == 1 and sweep.points[0].latency_p50_ms == 7.0
    assert sweep.points[0].samples_per_s == pytest.approx(1000 / 7.0)
