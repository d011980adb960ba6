"""The one timing method every model and candidate is measured with, plus memory, threads and isolation.

Public names load their submodule on first use (PEP 562): a spawned ``run_isolated`` worker
imports this package before it applies the caller's environment, and must not have loaded
numpy (whose BLAS pools read OMP_NUM_THREADS and friends at import) by then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # stats
    "LatencyStats": "stats",
    "PERCENTILE_MIN_SAMPLES": "stats",
    "UNSTABLE_IQR_OVER_MEDIAN": "stats",
    "compute_stats": "stats",
    "ci95_rel_of": "stats",
    "median_ci95": "stats",
    # timer
    "MeasureSettings": "timer",
    "StopReason": "timer",
    "Timing": "timer",
    "time_callable": "timer",
    "cuda_sync": "timer",
    "cuda_event_timer": "timer",
    # sweep
    "SweepStop": "sweep",
    "ThroughputPoint": "sweep",
    "ThroughputSweep": "sweep",
    "throughput_sweep": "sweep",
    "find_knee": "sweep",
    "batch_sizes": "sweep",
    "is_out_of_memory": "sweep",
    # memory
    "peak_rss_bytes": "memory",
    "current_rss_bytes": "memory",
    "cuda_peak_bytes": "memory",
    "reset_cuda_peak": "memory",
    # threads
    "thread_settings": "threads",
    "pin_torch_threads": "threads",
    # worker
    "WorkerStatus": "worker",
    "WorkerOutcome": "worker",
    "run_isolated": "worker",
}

# Literal, so that linters and type checkers can read it; it lists exactly the keys of _EXPORTS.
__all__ = [
    "LatencyStats", "MeasureSettings", "PERCENTILE_MIN_SAMPLES", "StopReason", "SweepStop", "ThroughputPoint",
    "ThroughputSweep", "Timing", "UNSTABLE_IQR_OVER_MEDIAN", "WorkerOutcome", "WorkerStatus", "batch_sizes",
    "ci95_rel_of", "compute_stats", "cuda_event_timer", "cuda_peak_bytes", "cuda_sync", "current_rss_bytes",
    "find_knee", "is_out_of_memory", "median_ci95", "peak_rss_bytes", "pin_torch_threads", "reset_cuda_peak",
    "run_isolated", "thread_settings", "throughput_sweep", "time_callable",
]


def __getattr__(name: str) -> Any:
    """Import the submodule that defines a public name on first access."""
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names alongside the module's own attributes."""
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from planner.measure.memory import (
        cuda_peak_bytes,
        current_rss_bytes,
        peak_rss_bytes,
        reset_cuda_peak,
    )
    from planner.measure.stats import (
        PERCENTILE_MIN_SAMPLES,
        UNSTABLE_IQR_OVER_MEDIAN,
        LatencyStats,
        ci95_rel_of,
        compute_stats,
        median_ci95,
    )
    from planner.measure.sweep import (
        SweepStop,
        ThroughputPoint,
        ThroughputSweep,
        batch_sizes,
        find_knee,
        is_out_of_memory,
        throughput_sweep,
    )
    from planner.measure.threads import pin_torch_threads, thread_settings
    from planner.measure.timer import (
        MeasureSettings,
        StopReason,
        Timing,
        cuda_event_timer,
        cuda_sync,
        time_callable,
    )
    from planner.measure.worker import WorkerOutcome, WorkerStatus, run_isolated
