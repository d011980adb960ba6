"""The timing loop: warm-up, stopping rules, input cycling, and sync before every clock read."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest
from measure_clock import FakeClock

from planner.codec import from_data, to_data
from planner.measure import MeasureSettings, StopReason, time_callable
from planner.measure import timer as timer_module


def small_settings(**overrides: Any) -> MeasureSettings:
    """Settings sized for fake milliseconds."""
    values: dict[str, Any] = dict(warmup_count=3, warmup_s=0.01, min_samples=10, max_samples=500,
                                  min_time_s=0.05, max_time_s=0.5, target_rel_ci=0.02)
    values.update(overrides)
    return MeasureSettings(**values)


def constant_work(clock: FakeClock, ms: float) -> Callable[[Any], None]:
    """Work that always takes ``ms``."""
    def run(_: Any) -> None:
        clock.advance_ms(ms)
    return run


def test_constant_work_stops_on_ci(clock: FakeClock) -> None:
    """Identical durations reach the CI target as soon as the minimums are met."""
    timing = time_callable(constant_work(clock, 2.0), [0], settings=small_settings())
    assert timing.stopped_by == StopReason.CI == "ci"
    assert timing.stats.ci95_rel == 0.0
    assert timing.stats.p50_ms == pytest.approx(2.0)
    # min_time 50 ms at 2 ms per call needs 25 samples; the CI is checked every few samples.
    assert 25 <= timing.stats.samples <= 25 + 4
    assert len(timing.samples_ms) == timing.stats.samples


def test_warmup_by_count_and_time(clock: FakeClock) -> None:
    """Warm-up runs until both the count and the time are reached."""
    # 1 ms calls: 3 calls done after 3 ms, but 10 ms of warm-up are required.
    timing = time_callable(constant_work(clock, 1.0), [0], settings=small_settings())
    assert timing.warmup_calls == 10
    # 100 ms calls: the time is reached after one call, but 3 calls are required.
    timing = time_callable(constant_work(clock, 100.0), [0], settings=small_settings())
    assert timing.warmup_calls == 3


def test_noisy_work_stops_at_time_cap(clock: FakeClock) -> None:
    """Two alternating durations never give a tight median CI, so the cap ends sampling."""
    calls = [0]

    def run(_: Any) -> None:
        calls[0] += 1
        clock.advance_ms(1.0 if calls[0] % 2 else 2.0)

    timing = time_callable(run, [0], settings=small_settings())
    assert timing.stopped_by == StopReason.TIME_CAP
    measured_ms = sum(timing.samples_ms)
    assert measured_ms == pytest.approx(500.0, abs=2.0)


def test_max_samples(clock: FakeClock) -> None:
    """The sample cap wins when it comes first."""
    calls = [0]

    def run(_: Any) -> None:
        calls[0] += 1
        clock.advance_ms(1.0 if calls[0] % 2 else 2.0)

    timing = time_callable(run, [0], settings=small_settings(max_samples=40))
    assert timing.stopped_by == StopReason.MAX_SAMPLES
    assert timing.stats.samples == 40


def test_inputs_cycle_through_the_pool(clock: FakeClock) -> None:
    """Each call gets the next input of the pool, wrapping around, never one tensor repeated."""
    pool = [object() for _ in range(7)]
    seen: list[int] = []

    def run(x: Any) -> None:
        seen.append(id(x))
        clock.advance_ms(1.0)

    time_callable(run, pool, settings=small_settings())
    expected = [id(pool[i % len(pool)]) for i in range(len(seen))]
    assert seen == expected
    assert len(set(seen)) == len(pool)
    assert all(a != b for a, b in zip(seen, seen[1:]))


def test_sync_before_every_clock_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a sync hook, every clock read is immediately preceded by a sync."""
    log: list[str] = []
    fake = FakeClock(log)
    monkeypatch.setattr(timer_module, "_now_ns", fake)

    def run(_: Any) -> None:
        log.append("run")
        fake.advance_ms(1.0)

    def sync() -> None:
        log.append("sync")

    time_callable(run, [0, 1], settings=small_settings(), sync=sync)
    clock_positions = [i for i, event in enumerate(log) if event == "clock"]
    assert clock_positions
    assert all(i > 0 and log[i - 1] == "sync" for i in clock_positions)
    # Every run is bracketed by clock reads, so none of its work escapes the sample.
    run_positions = [i for i, event in enumerate(log) if event == "run"]
    assert all(log[i + 1] == "sync" and log[i + 2] == "clock" for i in run_positions)


def test_event_timer_supplies_samples(clock: FakeClock) -> None:
    """An event timer's device times become the samples; the host clock only drives the budget."""
    def run(_: Any) -> None:
        clock.advance_ms(5.0)

    def event_timer(thunk: Callable[[], Any]) -> float:
        thunk()
        return 3.0

    timing = time_callable(run, [0], settings=small_settings(), event_timer=event_timer)
    assert set(timing.samples_ms) == {3.0}
    assert timing.stopped_by == StopReason.CI


def test_real_sleep() -> None:
    """A callable sleeping ~1 ms on the real clock: samples counted and a stop reason set."""
    pool = [bytearray(8) for _ in range(4)]
    seen: list[int] = []
    syncs = [0]

    def run(x: Any) -> None:
        seen.append(id(x))
        time.sleep(0.001)

    def sync() -> None:
        syncs[0] += 1

    settings = small_settings(min_time_s=0.05, max_time_s=0.4)
    timing = time_callable(run, pool, settings=settings, sync=sync)
    assert timing.stopped_by in set(StopReason)
    assert timing.stats.samples == len(timing.samples_ms) >= settings.min_samples
    assert len(set(seen)) == len(pool)
    assert timing.stats.p50_ms > 0.5  # sleep(1 ms) never returns early
    # Per sample two reads, plus the warm-up's and the bookkeeping ones.
    assert syncs[0] >= 2 * timing.stats.samples
    assert timing.wall_s > 0


def test_settings_presets_and_validation() -> None:
    """The presets match the documented values and bad settings are refused."""
    default = MeasureSettings.default()
    assert (default.warmup_count, default.warmup_s, default.min_samples) == (10, 0.2, 10)
    assert (default.min_time_s, default.max_time_s, default.target_rel_ci) == (1.0, 10.0, 0.02)
    quick = MeasureSettings.quick()
    assert (quick.warmup_count, quick.warmup_s, quick.min_samples, quick.max_time_s) == (3, 0.2, 8, 2.0)
    assert from_data(to_data(default), MeasureSettings) == default
    with pytest.raises(ValueError):
        small_settings(min_samples=0)
    with pytest.raises(ValueError):
        small_settings(max_time_s=0.01, min_time_s=0.05)
    with pytest.raises(ValueError):
        time_callable(lambda x: x, [], settings=default)


def test_timing_to_data(clock: FakeClock) -> None:
    """A timing serializes to plain values."""
    timing = time_callable(constant_work(clock, 2.0), [0], settings=small_settings())
    data = to_data(timing)
    assert data["stopped_by"] == "ci"
    assert data["stats"]["samples"] == len(data["samples_ms"])


@pytest.mark.gpu
def test_cuda_hooks_time_device_work() -> None:
    """On a CUDA device, sync and event hooks time a matmul with device time."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from planner.measure import cuda_event_timer, cuda_sync

    pool = [torch.randn(512, 512, device="cuda") for _ in range(3)]
    settings = MeasureSettings.quick()
    timing = time_callable(lambda x: x @ x, pool, settings=settings, sync=cuda_sync(),
                           event_timer=cuda_event_timer())
    assert timing.stats.samples >= 1
    assert timing.stats.p50_ms > 0


def noisy_work(clock: FakeClock, ms: float, spread: float) -> Callable[[Any], None]:
    """Work whose duration alternates around ``ms`` so the interval never reaches the CI target."""
    state = {"n": 0}

    def run(_: Any) -> None:
        state["n"] += 1
        clock.advance_ms(ms * (1 + spread * (-1) ** state["n"] * (state["n"] % 7) / 7))
    return run


def test_clearly_slower_work_is_dropped_after_six_samples(clock: FakeClock) -> None:
    """A slow call whose whole median interval lies above the search's bound stops as soon as an interval exists:
    six calls of 50 ms already span the least time a drop needs."""
    timing = time_callable(noisy_work(clock, 50.0, 0.3), [0],
                           settings=small_settings(max_time_s=5.0, drop_above_ms=25.0))
    assert timing.stopped_by == StopReason.DROPPED
    assert timing.stats.samples == 6  # the fewest samples that give the median a 95% interval


def test_a_fast_call_is_dropped_only_once_its_samples_span_the_least_drop_time(clock: FakeClock) -> None:
    """Clearly slower but 1 ms a call: six samples would span 6 ms, so the drop waits for DROP_MIN_S of them."""
    timing = time_callable(noisy_work(clock, 1.0, 0.3), [0],
                           settings=small_settings(max_time_s=5.0, max_samples=20_000, drop_above_ms=0.5))
    assert timing.stopped_by == StopReason.DROPPED
    assert sum(timing.samples_ms) >= timer_module.DROP_MIN_S * 1e3 > 6 * max(timing.samples_ms)


def test_a_short_burst_of_load_does_not_drop_a_fast_candidate(clock: FakeClock) -> None:
    """A 0.6 ms call whose first dozen calls a burst of other work lifts to 1.5 ms: its first six samples' interval
    lies wholly above a 0.8 ms bound, but by the time they span DROP_MIN_S the burst is a few samples of hundreds,
    and the candidate is timed to the end with its true median."""
    calls = {"n": 0}

    def burst_then_steady(_: Any) -> None:
        calls["n"] += 1
        clock.advance_ms(1.5 if calls["n"] <= 3 + 12 else 0.6 * (1 + 0.02 * (-1) ** calls["n"]))  # 3 warm-up calls

    timing = time_callable(burst_then_steady, [0], settings=small_settings(
        warmup_s=0.0, max_time_s=0.5, max_samples=20_000, drop_above_ms=0.8))
    assert timing.stopped_by != StopReason.DROPPED
    assert timing.stats.p50_ms == pytest.approx(0.6, rel=0.05)


def test_work_near_the_bound_is_not_dropped(clock: FakeClock) -> None:
    """Work whose interval still reaches below the bound is timed as usual: close is not clearly slower."""
    timing = time_callable(noisy_work(clock, 10.0, 0.3), [0],
                           settings=small_settings(max_time_s=0.5, drop_above_ms=10.5))
    assert timing.stopped_by != StopReason.DROPPED
    assert timing.stats.samples > 6
