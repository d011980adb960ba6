"""The one timing loop every model and candidate is measured with.

Method (see the design doc; trtexec warms up 200 ms then runs >= 3 s and >= 10 iterations):

1. Warm up until both ``warmup_count`` calls and ``warmup_s`` seconds are done; warm-up never runs
   longer than ``max_time_s`` so a very slow model cannot stall the planner there.
2. Time one call per sample with ``time.perf_counter_ns``. When a ``sync`` hook is given it is
   called before *every* clock read, so queued device work is finished and the clock sees it.
   When an ``event_timer`` hook is given (e.g. CUDA events) the sample is the device time it
   reports; the host clock then only drives the time budget.
3. Inputs come from the pool in order, cycling, so caches are not fed the same tensor every call.
4. Stop when the median's distribution-free 95% CI is within ``target_rel_ci`` of the median
   (checked only once ``min_samples`` and ``min_time_s`` are reached, and then every few samples),
   or at ``max_samples``, or when the measuring phase has run ``max_time_s`` and has at least
   ``min_samples`` (or has run ``HARD_CAP_FACTOR`` times the cap: a model too slow for the budget
   is reported with the samples it gave).
5. With ``drop_above_ms`` set (the budgeted search's bound: the best candidate's median interval top),
   stop as soon as this call's own median interval lies wholly above it, once the samples span
   ``DROP_MIN_S``: the candidate is clearly slower, and more samples would only measure by how much.
"""

from __future__ import annotations

import functools
import importlib.util
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Sequence

import numpy as np

# The CUDA hooks live in planner.hardware.clock so the ceiling micro-benchmarks (planner.hardware,
# which planner.measure imports) time with them too; `cuda_sync` is re-exported as planner.measure.cuda_sync.
from planner.hardware.clock import EventTimer, cuda_event_timer
from planner.hardware.clock import cuda_sync as cuda_sync
from planner.measure.stats import LatencyStats, ci95_rel_of, compute_stats, median_ci95

# Module-level so tests can substitute a deterministic clock.
_now_ns: Callable[[], int] = time.perf_counter_ns


class StopReason(StrEnum):
    """Why the sampling loop stopped."""

    CI = "ci"
    TIME_CAP = "time cap"
    MAX_SAMPLES = "max samples"
    DROPPED = "dropped"  # clearly slower than the bound the search gave (drop_above_ms)


HARD_CAP_FACTOR = 3

_DROP_MIN_SAMPLES = 6
"""Fewer samples give no 95% interval of the median (see planner.measure.stats), so none can be dropped."""

DROP_MIN_S = 0.2
"""How long a candidate is timed, at the least, before it may be dropped (besides _DROP_MIN_SAMPLES).

Six samples' interval describes the span they were taken in, not the candidate: six calls of a 0.6 ms model
last under 4 ms, and a burst of other work that long can lift all six. A small image classifier's OpenVINO f32
candidate read 1.02 ms over its six screened samples on a busy 2-core AMD EPYC and was dropped, where timed
undisturbed it ran 0.67 ms, the fastest of the plan. A fifth of a second takes hundreds of samples of such a
model, so a burst must last that long to decide, and costs a tenth of the 2-second screen; a model slower
than 33 ms a call reaches it within its six samples, so its drop comes no later than before."""


@dataclass(frozen=True)
class MeasureSettings:
    """How long to warm up and when to stop sampling."""

    warmup_count: int
    warmup_s: float
    min_samples: int
    max_samples: int
    min_time_s: float
    max_time_s: float
    target_rel_ci: float = 0.02
    drop_above_ms: float | None = None  # stop once the median's 95% interval lies wholly above this (ms)

    def __post_init__(self) -> None:
        if self.warmup_count < 0 or self.warmup_s < 0:
            raise ValueError("warm-up count and time must not be negative")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ValueError("need 1 <= min_samples <= max_samples")
        if self.min_time_s < 0 or self.max_time_s <= 0 or self.max_time_s < self.min_time_s:
            raise ValueError("need 0 <= min_time_s <= max_time_s and max_time_s > 0")
        if self.target_rel_ci < 0:
            raise ValueError("target_rel_ci must not be negative")

    @classmethod
    def default(cls) -> MeasureSettings:
        """Settings for reported numbers: 10 calls / 0.2 s warm-up, >= 10 samples and 1 s, cap 10 s."""
        return cls(warmup_count=10, warmup_s=0.2, min_samples=10, max_samples=100_000,
                   min_time_s=1.0, max_time_s=10.0, target_rel_ci=0.02)

    @classmethod
    def quick(cls) -> MeasureSettings:
        """Settings for fast screening: 3 calls / 0.2 s warm-up, >= 8 samples, cap 2 s.

        The 0.2 s warm-up matters on a busy machine: thread pools that lost their cores need
        a few hundred ms to settle, and a shorter warm-up times that settling instead.
        """
        return cls(warmup_count=3, warmup_s=0.2, min_samples=8, max_samples=20_000,
                   min_time_s=0.3, max_time_s=2.0, target_rel_ci=0.02)


@dataclass(frozen=True)
class Timing:
    """The result of one ``time_callable`` run."""

    stats: LatencyStats
    samples_ms: tuple[float, ...]
    stopped_by: StopReason
    wall_s: float
    warmup_calls: int = 0


def _ci_check_step(n: int) -> int:
    # Re-checking every ~5% of the samples keeps the sort cost negligible next to the calls timed,
    # while a slow model (few samples) is still checked often enough not to overrun.
    return max(4, n // 20)


def time_callable(
    run: Callable[[Any], Any],
    inputs: Sequence[Any],
    *,
    settings: MeasureSettings,
    sync: Callable[[], None] | None = None,
    event_timer: EventTimer | None = None,
) -> Timing:
    """Time ``run(x)`` over inputs cycled from the pool; see the module docstring for the method."""
    if len(inputs) == 0:
        raise ValueError("time_callable needs at least one input in the pool")
    pool_size = len(inputs)

    def read_clock() -> int:
        if sync is not None:
            sync()
        return _now_ns()

    start_ns = read_clock()
    index = 0

    # Warm-up: by count and by time, bounded by the cap.
    warmup_calls = 0
    warmup_ns = int(settings.warmup_s * 1e9)
    cap_ns = int(settings.max_time_s * 1e9)
    now = start_ns
    while (warmup_calls < settings.warmup_count or now - start_ns < warmup_ns) and now - start_ns < cap_ns:
        run(inputs[index % pool_size])
        index += 1
        warmup_calls += 1
        now = read_clock()

    samples: list[float] = []
    min_time_ns = int(settings.min_time_s * 1e9)
    drop_min_ns = int(DROP_MIN_S * 1e9)
    measure_start = read_clock()
    next_check = settings.min_samples
    stopped_by: StopReason | None = None
    while stopped_by is None:
        x = inputs[index % pool_size]
        index += 1
        t0 = read_clock()
        if event_timer is not None:
            samples.append(float(event_timer(functools.partial(run, x))))
            t1 = read_clock()
        else:
            run(x)
            t1 = read_clock()
            samples.append((t1 - t0) / 1e6)
        n = len(samples)
        elapsed = t1 - measure_start
        if n >= settings.max_samples:
            stopped_by = StopReason.MAX_SAMPLES
        elif n >= next_check and elapsed >= min_time_ns:
            next_check = n + _ci_check_step(n)
            if ci95_rel_of(samples) <= settings.target_rel_ci:
                stopped_by = StopReason.CI
        # Checked on every sample while few (a slow candidate is the one worth stopping early), then sparsely.
        if (stopped_by is None and settings.drop_above_ms is not None and n >= _DROP_MIN_SAMPLES
                and elapsed >= drop_min_ns and (n < 64 or n % 16 == 0)):
            bounds = median_ci95(np.sort(np.asarray(samples)))
            if bounds is not None and bounds[0] > settings.drop_above_ms:
                stopped_by = StopReason.DROPPED
        # The cap waits for min_samples (a median of 2 is not a measurement) unless that would
        # take more than HARD_CAP_FACTOR times the cap: then the slow model keeps what it gave.
        if stopped_by is None and elapsed >= cap_ns and (
                n >= settings.min_samples or elapsed >= HARD_CAP_FACTOR * cap_ns):
            stopped_by = StopReason.TIME_CAP

    end_ns = read_clock()
    return Timing(
        stats=compute_stats(samples),
        samples_ms=tuple(samples),
        stopped_by=stopped_by,
        wall_s=(end_ns - start_ns) / 1e9,
        warmup_calls=warmup_calls,
    )


HOST_CLOCK = "host clock (perf_counter)"
HOST_CLOCK_SYNCED = "host clock (perf_counter), device synchronized before each read"
CUDA_EVENTS = "CUDA events (device time on the session's stream)"


@dataclass(frozen=True)
class SessionTimer:
    """How one session's calls are timed: the hooks ``time_callable`` takes, and a label for results."""

    label: str
    sync: Callable[[], None] | None = None
    event_timer: EventTimer | None = None


def session_timer(session: Any) -> SessionTimer:
    """CUDA events for a session that declares ``needs_sync`` (its work is queued on a CUDA stream).

    The session's own ``sync`` still runs before every clock read, so the host clock keeps driving
    the time budget and each sample starts on an idle stream. A session that needs no sync runs
    synchronously on the host and is timed by the host clock.
    """
    if not getattr(session, "needs_sync", False):
        return SessionTimer(HOST_CLOCK)
    if not _cuda_available():
        # An asynchronous session on some other device: waiting for it is all that can be done.
        return SessionTimer(HOST_CLOCK_SYNCED, sync=session.sync)
    return SessionTimer(CUDA_EVENTS, sync=session.sync, event_timer=cuda_event_timer())


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())
