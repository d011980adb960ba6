"""Throughput with several requests in flight: one stream against the runtime's own stream count.

A serving process that must reach a minimum throughput keeps several requests in flight: OpenVINO
splits the cores into streams (its THROUGHPUT hint) and ONNX Runtime serves from several sessions,
each with a share of the threads. The batch sweep times one request at a time, so it cannot see
that. Here a candidate is run for a fixed time window at its best batch, first as it is configured
(one request at a time), then with the runtime's stream count.

The rate ranked is the batch sweep's rule, so the two compare: rows per call times the calls in
flight over the median call time. The rows completed over the window's wall time are kept beside it
(sustained): on a busy machine the slow calls the median leaves out pull that one down.

A session opts in with a ``parallel_runs()`` method returning a ``ParallelRuns``, or a sentence
saying why it has no parallel mode here (one core); sessions without the method are not measured
here. Every call completes before ``run_for`` returns, so the wall-clock count is exact.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from planner.results.values import StreamPoint

WARMUP_S = 0.2
"""Untimed running first: new requests allocate their buffers and thread pools spin up."""
WINDOW_S = 0.25
"""One timed window; the median of ``WINDOWS`` of them is kept (a busy moment spoils one, not all)."""
WINDOWS = 3
QUICK_WINDOW_S = 0.15


@runtime_checkable
class ParallelRuns(Protocol):
    """A runtime's way of keeping `streams` requests in flight on one prepared input."""

    streams: int
    basis: str

    def run_for(self, prepared: Any, seconds: float) -> list[float]:
        """Keep `streams` requests running on `prepared` for about `seconds`; return each call's seconds.

        Every call has finished when this returns.
        """


class ThreadedRuns:
    """Run each callable in its own thread, back to back, until the time is up.

    Fits runtimes whose ``run`` releases the GIL (ONNX Runtime, OpenVINO's synchronous infer):
    one callable is one request at a time; N callables over N sessions are N streams.
    """

    def __init__(self, runs: Sequence[Callable[[Any], Any]], basis: str) -> None:
        if not runs:
            raise ValueError("ThreadedRuns needs at least one callable")
        self._runs = list(runs)
        self.streams = len(self._runs)
        self.basis = basis

    def run_for(self, prepared: Any, seconds: float) -> list[float]:
        """Every callable loops on `prepared` until the deadline; returns every completed call's seconds."""
        deadline = time.perf_counter() + seconds
        durations: list[list[float]] = [[] for _ in range(self.streams)]
        errors: list[Exception] = []

        def worker(i: int) -> None:
            _loop(self._runs[i], prepared, deadline, durations[i], errors)

        if self.streams == 1:
            worker(0)
        else:
            threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(self.streams)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]
        return [d for per_thread in durations for d in per_thread]


def _loop(run: Callable[[Any], Any], prepared: Any, deadline: float, out: list[float],
          errors: list[Exception]) -> None:
    try:
        # At least one call per stream, even when a busy machine starts its thread after the deadline: a stream
        # that never ran would neither count nor raise its run's error.
        start = time.perf_counter()
        while True:
            run(prepared)
            end = time.perf_counter()
            out.append(end - start)
            start = end
            if start >= deadline:
                break
    except Exception as exc:  # noqa: BLE001 - re-raised by run_for, in the caller's thread
        errors.append(exc)


def rows_per_second(runs: ParallelRuns, prepared: Any, rows: int, *, quick: bool = False) -> tuple[float, float]:
    """(rows/s by the sweep's rule, rows/s counted over wall time) with `runs` keeping its streams busy.

    The first is streams x rows over the median call time of all timed calls; the second the median
    over a few fixed-time windows of the rows completed over the window's wall time.
    """
    runs.run_for(prepared, WARMUP_S)
    window = QUICK_WINDOW_S if quick else WINDOW_S
    durations: list[float] = []
    counted = []
    for _ in range(WINDOWS):
        start = time.perf_counter()
        calls = runs.run_for(prepared, window)
        elapsed = time.perf_counter() - start
        durations += calls
        if calls and elapsed > 0:
            counted.append(len(calls) * rows / elapsed)
    median = statistics.median(durations) if durations else 0.0
    if not counted or median <= 0:
        raise RuntimeError("no call completed within the timing windows")
    return runs.streams * rows / median, statistics.median(counted)


def split_threads(threads: int) -> tuple[int, int]:
    """(streams, threads each) for a runtime that serves concurrent requests from separate sessions.

    One thread per stream up to 4 threads, two per stream beyond: small kernels scale poorly across
    threads, yet a stream of one thread on a many-core machine multiplies the weights in memory.
    """
    threads = max(1, int(threads))
    streams = threads if threads <= 4 else threads // 2
    return streams, max(1, threads // streams)


@dataclass(frozen=True)
class StreamsMeasurement:
    """The points measured (one stream, then several), or why there are none."""

    points: tuple[StreamPoint, ...] = ()
    skipped: str = ""


def measure_streams(session: Any, prepared: Any, *, batch: int, rows: int | None = None,
                    quick: bool = False) -> StreamsMeasurement | None:
    """Rows/s at `batch` one request at a time and with the session's parallel runs; None if it has none.

    `prepared` is one input at `batch`, already prepared by the session; `rows` is how many rows
    one call really processes (a fixed-batch session pads), `batch` when not given.
    """
    make = getattr(session, "parallel_runs", None)
    if make is None:
        return None
    rows = rows or batch
    try:
        parallel = make()
    except Exception as exc:  # noqa: BLE001 - a runtime that cannot open its streams is a note, not a failure
        return StreamsMeasurement(skipped=f"parallel streams could not be opened: {_first_line(exc)}")
    if isinstance(parallel, str):
        return StreamsMeasurement(skipped=parallel)
    try:
        single, single_counted = rows_per_second(ThreadedRuns([session.run], "as configured, one request at a time"),
                                                 prepared, rows, quick=quick)
        points = [StreamPoint(batch, 1, single, "as configured, one request at a time", single_counted)]
        if parallel.streams > 1:
            many, many_counted = rows_per_second(parallel, prepared, rows, quick=quick)
            points.append(StreamPoint(batch, parallel.streams, many, parallel.basis, many_counted))
    except Exception as exc:  # noqa: BLE001 - the latency and sweep figures stand without this one
        return StreamsMeasurement(skipped=f"parallel streams failed at batch {batch}: {_first_line(exc)}")
    finally:
        close = getattr(parallel, "close", None)
        if callable(close):
            close()
    skipped = "" if parallel.streams > 1 else f"one stream only: {parallel.basis}"
    return StreamsMeasurement(points=tuple(points), skipped=skipped)


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
