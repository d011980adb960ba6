"""Throughput against batch size: batches 1, 2, 4, ... until memory runs out or is estimated to,
the budget is hit, or max_batch.

The knee: the smallest swept batch ``b`` such that no later batch in the sweep reaches more than
1.10x the throughput at ``b`` (samples/s). Comparing with *every* later batch, not only the next,
keeps one noisy dip from ending the search early. There is no knee (None) when fewer than two
batches were measured or when only the last batch qualifies (throughput still growing at the end).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Mapping, Sequence

from planner import units
from planner.measure.timer import MeasureSettings, time_callable
from planner.results.values import ThroughputPoint

KNEE_GROWTH = 1.10
"""A later batch must beat this multiple of a batch's throughput for that batch not to be the knee."""

_OOM_MESSAGES: tuple[str, ...] = (
    "out of memory",                # torch CUDA/CPU, cuDNN, generic
    "failed to allocate",           # onnxruntime BFCArena / CPU allocator, OpenVINO
    "bad_alloc",                    # C++ std::bad_alloc surfaced by OpenVINO and others
    "cannot allocate memory",       # ENOMEM text
    "alloc_failed",                 # CUBLAS_STATUS_ALLOC_FAILED
    "memoryallocation",             # cudaErrorMemoryAllocation
    "insufficient memory",
)


def is_out_of_memory(exc: BaseException) -> bool:
    """Return True when the exception, or one it was raised from, reports an allocation failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        torch = sys.modules.get("torch")
        oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
        if isinstance(oom_type, type) and isinstance(current, oom_type):
            return True
        message = str(current).lower()
        if any(text in message for text in _OOM_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False


class SweepStop(StrEnum):
    """Why a throughput sweep ended."""

    COMPLETED = "completed"
    OUT_OF_MEMORY = "out of memory"
    MEMORY_BUDGET = "memory budget"
    MEMORY_ESTIMATE = "memory estimate"  # stopped before a batch estimated not to fit: nothing allocated
    TIME_LIMIT = "time limit"  # stopped before a batch whose timing would overrun the sweep's time limit
    FAILED = "failed"


@dataclass(frozen=True)
class ThroughputSweep:
    """The measured batches (all within memory and budget), the knee, and why the sweep ended."""

    points: tuple[ThroughputPoint, ...]
    knee_batch: int | None
    stopped_reason: str
    stop: SweepStop = SweepStop.COMPLETED


def batch_sizes(max_batch: int) -> list[int]:
    """Return 1, 2, 4, ... up to ``max_batch``, ending with ``max_batch`` itself if not a power of two."""
    if max_batch < 1:
        raise ValueError("max_batch must be at least 1")
    sizes: list[int] = []
    batch = 1
    while batch <= max_batch:
        sizes.append(batch)
        batch *= 2
    if sizes[-1] != max_batch:
        sizes.append(max_batch)
    return sizes


def find_knee(points: Sequence[ThroughputPoint]) -> int | None:
    """Return the knee batch of the points (in batch order); see the module docstring for the rule."""
    for i, point in enumerate(points[:-1]):
        best_later = max(p.samples_per_s for p in points[i + 1:])
        if best_later <= KNEE_GROWTH * point.samples_per_s:
            return point.batch
    return None


def throughput_sweep(
    run_for_batch: Callable[[int], tuple[Callable[[Any], Any], Sequence[Any]]],
    *,
    max_batch: int = 64,
    memory_budget_bytes: int | None = None,
    settings: MeasureSettings,
    memory_probe: Callable[[], int | None] | None = None,
    memory_reset: Callable[[], None] | None = None,
    sync: Callable[[], None] | None = None,
    estimate_bytes: Callable[[int], int] | None = None,
    memory_limit_bytes: int | None = None,
    estimate_basis: str = "",
    time_limit_s: float | None = None,
    measured_p50_ms: Mapping[int, float] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ThroughputSweep:
    """Time each batch size with ``time_callable`` and find where throughput stops growing.

    ``run_for_batch(b)`` builds the callable and its input pool for batch ``b``. An error while
    building or running a batch ends the sweep there, with the batch and the error as the reason:
    out of memory (see ``is_out_of_memory``), or a runtime or model that takes only some batch
    sizes (the batch the model was measured at already ran, so that is a finding, not a failure).
    ``memory_probe`` is read after each batch (``memory_reset`` first, when given, so peaks are
    per batch); a reading above ``memory_budget_bytes`` ends the sweep and that batch is left out
    of the points. ``estimate_bytes(b)``, when given with ``memory_limit_bytes``, is checked
    before batch ``b`` is built: a batch estimated above the limit ends the sweep before anything
    of it is allocated (``estimate_basis`` says how the estimate was made).
    ``time_limit_s`` bounds the sweep's wall time: a batch whose timing (warm-up and minimum samples, at
    the last batch's time per sample scaled by the batch) would end past it is not started.
    ``measured_p50_ms`` holds batches already timed on this callable (the main timing at the model's own
    batch): their point is taken from it, not timed twice.
    """
    points: list[ThroughputPoint] = []
    stop = SweepStop.COMPLETED
    reason = f"reached max_batch {max_batch}"
    started = clock()
    for batch in batch_sizes(max_batch):
        if time_limit_s is not None and points:
            last = points[-1]
            cost_s = ((settings.warmup_count + settings.min_samples) * last.latency_p50_ms / 1e3
                      * batch / last.batch)
            if clock() - started + cost_s > time_limit_s:
                stop = SweepStop.TIME_LIMIT
                reason = (f"stopped before batch {batch}: timing it would take about {cost_s:.0f} s, past the "
                          f"{time_limit_s:g} s this sweep may take")
                break
        known = (measured_p50_ms or {}).get(batch)
        if known is not None:
            points.append(ThroughputPoint(batch=batch, latency_p50_ms=known,
                                          samples_per_s=batch / (known / 1000.0) if known > 0 else float("inf"),
                                          peak_memory_bytes=memory_probe() if memory_probe is not None else None))
            continue
        estimate = estimate_bytes(batch) if estimate_bytes is not None else None
        if estimate is not None and memory_limit_bytes is not None and estimate > memory_limit_bytes:
            stop = SweepStop.MEMORY_ESTIMATE
            basis = f" ({estimate_basis})" if estimate_basis else ""
            reason = (f"stopped before batch {batch}: it would need about {units.size(estimate)}{basis}, "
                      f"more than the {units.size(memory_limit_bytes)} of memory it may use; "
                      "nothing was allocated for it")
            break
        if memory_reset is not None:
            memory_reset()
        try:
            run, inputs = run_for_batch(batch)
            timing = time_callable(run, inputs, settings=settings, sync=sync)
        except Exception as exc:  # noqa: BLE001 - every failure ends the sweep with its reason
            first = (str(exc).strip().splitlines() or [""])[0][:240]
            if is_out_of_memory(exc):
                stop = SweepStop.OUT_OF_MEMORY
                reason = f"batch {batch} ran out of memory: {type(exc).__name__}: {first}"
            else:
                stop = SweepStop.FAILED
                reason = f"batch {batch} failed: {type(exc).__name__}: {first}"
            break
        peak = memory_probe() if memory_probe is not None else None
        if memory_budget_bytes is not None and peak is not None and peak > memory_budget_bytes:
            stop = SweepStop.MEMORY_BUDGET
            reason = (f"batch {batch} peaked at {peak} bytes, over the memory budget of "
                      f"{memory_budget_bytes} bytes")
            break
        p50 = timing.stats.p50_ms
        rate = batch / (p50 / 1000.0) if p50 > 0 else float("inf")
        points.append(ThroughputPoint(batch=batch, latency_p50_ms=p50, samples_per_s=rate,
                                      peak_memory_bytes=peak))
    return ThroughputSweep(points=tuple(points), knee_batch=find_knee(points),
                           stopped_reason=reason, stop=stop)
