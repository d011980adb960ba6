"""Clocks for timing work on this machine: the host's perf_counter, and CUDA events for GPU work.

The measuring loop (`planner.measure.timer`) and the ceiling micro-benchmarks
(`planner.hardware.ceilings`) time with these. They live here, not in planner.measure, because
planner.measure already imports planner.hardware (its audit reads the machine probes), so
planner.hardware cannot import planner.measure back without the two packages importing each other.

`best_rate` is bounded in time (`MAX_RATE_SECONDS`): a clock that never settles raises `ClockError`,
and the ceilings then fall back to their labelled estimate instead of holding the plan up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

EventTimer = Callable[[Callable[[], Any]], float]
"""Runs the given thunk and returns its device time in milliseconds (e.g. between CUDA events)."""

RunClock = Callable[[Callable[[], object], int], float]
"""`clock(run, iterations)`: the seconds that `iterations` back-to-back calls of `run` take."""

MAX_ITERATIONS_PER_SAMPLE = 1000
"""`best_rate` never calls a very fast thunk more than this many times for one sample."""

MAX_RATE_SECONDS = 120.0
"""The most time one `best_rate` may take, warm-up and samples together, before it gives up with a `ClockError`.

The slowest honest measurement it serves, a full-mode 2048 x 2048 fp32 GEMM on a Raspberry Pi 4's four
cores (about 1.5 s a call, six calls, then the same again as a convolution), takes well under a minute;
past two minutes the work or the clock is broken, and the ceilings fall back to a labelled estimate
rather than keeping a plan waiting. A single call that never returns cannot be interrupted here.
"""


class ClockError(RuntimeError):
    """The clock could not time the work: it gave an impossible reading, or sampling ran past its time cap.

    A RuntimeError, so the callers that already treat a kernel torch lacks as 'this figure is not
    measurable here' (the int8 GEMM, the convolution) treat a clock that cannot time it the same way.
    """


def cuda_sync(device: Any = None) -> Callable[[], None]:
    """Return a hook that waits for all queued work on a CUDA device (imports torch)."""
    import torch

    def _sync() -> None:
        torch.cuda.synchronize(device)

    return _sync


def cuda_event_timer(device: Any = None) -> EventTimer:
    """Return an `EventTimer` that measures a thunk's device time between two CUDA events.

    The events are recorded on the device's current stream when the thunk runs, and the timer
    waits for the end event, so the work the thunk queued is finished when it returns.
    """
    import torch

    def _time(thunk: Callable[[], Any]) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream(device)
        start.record(stream)
        thunk()
        end.record(stream)
        end.synchronize()
        return float(start.elapsed_time(end))

    return _time


def host_clock(run: Callable[[], object], iterations: int) -> float:
    """A `RunClock` read on the host (perf_counter): right for work that is finished when the call returns."""
    start = time.perf_counter()
    for _ in range(iterations):
        run()
    return time.perf_counter() - start


def event_clock(timer: EventTimer) -> RunClock:
    """A `RunClock` that times the calls with a device `EventTimer`, for work queued asynchronously (CUDA)."""

    def clock(run: Callable[[], object], iterations: int) -> float:
        """Device seconds for `iterations` calls, all between one pair of events."""

        def calls() -> None:
            for _ in range(iterations):
                run()

        return timer(calls) / 1000.0

    return clock


def best_rate(run: Callable[[], object], work: float, repeats: int, min_sample_s: float,
              clock: RunClock, *, max_total_s: float = MAX_RATE_SECONDS,
              wall: Callable[[], float] = time.monotonic) -> tuple[float, dict[str, Any]]:
    """Best `work` per second of `run` over `repeats` samples, and how they were taken.

    One call first warms up (and sizes the samples); each sample then calls `run` enough times to
    last at least `min_sample_s`, so the clock resolves it. The best sample is kept: interference
    only ever slows a micro-benchmark down. The details give the iterations per sample, the best
    sample's seconds, the repeats and the spread, (slowest - fastest) / fastest.

    Bounded in time: past `max_total_s` (by `wall`, or by the clock's own readings, whichever says
    more) it raises `ClockError` between samples instead of sampling on; so does a reading that
    is negative, not a number, or (for a sample) zero, which no rate can be made of.
    """
    started = wall()
    spent = 0.0

    def timed(iterations: int, *, may_be_zero: bool) -> float:
        nonlocal spent
        seconds = clock(run, iterations)
        if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not may_be_zero):
            raise ClockError(f"the clock read {seconds} s for {iterations} call(s): it cannot time this work")
        spent += seconds
        elapsed = max(wall() - started, spent)
        if elapsed > max_total_s:
            raise ClockError(f"timing did not settle: {elapsed:.0f} s spent past the {max_total_s:.0f} s cap "
                             f"({iterations} call(s) per sample)")
        return seconds

    # A warm-up faster than the clock resolves reads 0 s: the sample is then sized to the cap on iterations.
    warm = timed(1, may_be_zero=True)
    iterations = max(1, min(MAX_ITERATIONS_PER_SAMPLE, math.ceil(min_sample_s / max(warm, 1e-9))))
    samples = [timed(iterations, may_be_zero=False) for _ in range(repeats)]
    best = min(samples)
    spread = (max(samples) - best) / best
    return work * iterations / best, {"iterations_per_sample": iterations, "best_sample_s": best,
                                      "repeats": repeats, "spread": round(spread, 4)}
