"""Which ceilings to keep: a measurement taken under interference never replaces a cleaner one.

A new measurement of a device is compared with the cached one by how cleanly each was taken
(`cleanliness`): idle beats unknown (the load could not be read), which beats busy, which beats a
failed measurement. The rule (`settle`):

- a new measurement at least as clean as the cached one replaces it, figures and all (so a refresh
  on a quiet machine can also lower a figure that was wrong);
- a less clean one is kept out of the cache: the cached figures are used and the details say so,
  except that, per figure, a higher new figure is kept (and cached), because interference only
  ever lowers a peak or a bandwidth: a higher figure is a real lower bound whatever the load was.

A measurement is failed when a precision the hardware runs natively came out slower than a more
precise one (`misordered`: bf16 below fp32 on a CPU with native bf16, int8 below bf16 or fp32 with
VNNI/AMX): that is interference or a broken kernel, never the hardware. It is not cached.

No torch here: this module only compares numbers, so it is tested with made-up measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from planner import units
from planner.hardware.ceiling_notes import REFRESH_HINT
from planner.hardware.ceiling_values import Ceilings
from planner.hardware.profile import CpuInfo

IDLE, UNKNOWN, BUSY, FAILED = "idle", "unknown", "busy", "failed"
_RANK = {IDLE: 0, UNKNOWN: 1, BUSY: 2, FAILED: 3}

CPU_PRECISIONS = ("fp32", "bf16", "int8")
"""The CPU's measured precisions, most precise first: each should be at least as fast as those before it."""

X86_INT8_DOT = ("avx512_vnni", "avx_vnni", "amx_int8")
"""x86 int8 dot-product instructions that oneDNN's int8 GEMM uses.

Arm's dotprod/i8mm are left out of the order check: whether torch's CPU int8 GEMM uses them
depends on the build, so an Arm int8 peak below fp32 may be the kernel, not interference.
"""

KEPT_OUT = "kept_out"
KEPT_OUT_NOTE = "kept_out_note"


def native_precisions(cpu: CpuInfo) -> set[str]:
    """The precisions this CPU computes in hardware, whose peak must not fall below a more precise one."""
    native = set()
    if cpu.has_bf16:
        native.add("bf16")
    if any(cpu.has(f) for f in X86_INT8_DOT):
        native.add("int8")
    return native


def misordered(ceilings: Ceilings, native: set[str]) -> dict[str, str]:
    """Each native precision whose peak came out below a more precise one's, with why it is a failed measurement."""
    peaks = ceilings.peak_flops
    failed: dict[str, str] = {}
    for i, precision in enumerate(CPU_PRECISIONS):
        if precision not in native or precision not in peaks:
            continue
        faster = [(other, peaks[other]) for other in CPU_PRECISIONS[:i] if peaks.get(other, 0.0) > peaks[precision]]
        if faster:
            other, rate = max(faster, key=lambda item: item[1])
            failed[precision] = (f"{precision} measured {units.flop_rate(peaks[precision])}, below {other} "
                                 f"{units.flop_rate(rate)} on a CPU that runs {precision} natively: a failed "
                                 f"measurement (other work slowed it), so it was not cached; {REFRESH_HINT} on an "
                                 "idle machine")
    return failed


def mark_failed(ceilings: Ceilings, failed: dict[str, str]) -> Ceilings:
    """These ceilings with each failed precision flagged in the details (`<precision>_failed`)."""
    if not failed:
        return ceilings
    return replace(ceilings, details={**ceilings.details, **{f"{p}_failed": why for p, why in failed.items()}})


def failed_precisions(details: dict[str, Any]) -> list[str]:
    """The precisions flagged as failed measurements in these details."""
    return [name.removesuffix("_failed") for name, value in details.items() if name.endswith("_failed") and value]


def state(details: dict[str, Any]) -> str:
    """'idle', 'unknown', 'busy' or 'failed': how cleanly the figures in these details were taken."""
    if failed_precisions(details):
        return FAILED
    measured_while = str(details.get("measured_while") or UNKNOWN)
    return measured_while if measured_while in _RANK else UNKNOWN


def other_cores(details: dict[str, Any]) -> float | None:
    """Other processes' cores during the last attempt, or None when not read."""
    loads = [v for v in details.get("other_cores") or [] if isinstance(v, (int, float))]
    return float(loads[-1]) if loads else None


def cleanliness(details: dict[str, Any]) -> tuple[int, float]:
    """A sort key, lower is cleaner: the state's rank, then (between busy ones) other processes' cores."""
    rank = _RANK[state(details)]
    load = other_cores(details) if rank == _RANK[BUSY] else None
    return rank, load or 0.0


def at_least_as_clean(new: Ceilings, cached: Ceilings) -> bool:
    """Whether `new` was measured at least as cleanly as `cached`, so that it may replace it."""
    return cleanliness(new.details) <= cleanliness(cached.details)


def _how(ceilings: Ceilings) -> str:
    """How a kept-out measurement was taken, in a few words: 'under load (0.99 cores busy) whose bf16 came out
    below fp32'."""
    details = ceilings.details
    words = []
    load = other_cores(details)
    if details.get("measured_while") == BUSY:
        words.append(f"under load ({load:.2f} cores busy)" if load is not None else "under load")
    elif details.get("measured_while") != IDLE:
        words.append("taken while the machine's load could not be read")
    peaks = ceilings.peak_flops
    for precision in failed_precisions(details):
        if precision not in CPU_PRECISIONS or precision not in peaks:
            continue
        above = [p for p in CPU_PRECISIONS[:CPU_PRECISIONS.index(precision)] if peaks.get(p, 0.0) > peaks[precision]]
        words.append(f"whose {precision} came out below {' and '.join(above)}")
    return " ".join(words)


@dataclass(frozen=True)
class Settled:
    """What `settle` decided: the ceilings to use now, and what the cache should hold."""

    use: Ceilings
    cache: Ceilings | None  # None: nothing good enough to cache (a failed first measurement)
    replaced: bool  # the new measurement replaced the cached one (else the cached one stays, maybe raised)
    changed: bool  # the cache must be written: it replaced it, or raised a cached figure


def settle(new: Ceilings, cached: Ceilings | None) -> Settled:
    """The ceilings to use and to cache, given a new measurement and the cached one (None when none).

    See the module's rule. A failed precision is never cached; with no cached figure for it, it is
    shown with its flag.
    """
    failed = failed_precisions(new.details)
    if cached is None:
        return Settled(new, None if failed else new, replaced=True, changed=not failed)
    if not failed and at_least_as_clean(new, cached):
        return Settled(new, new, replaced=True, changed=True)
    stamp = new.details.get("timestamp")
    where = f"a re-measure {_how(new)}" + (f" at {stamp}" if stamp else "")
    peaks = dict(cached.peak_flops)
    details = {k: v for k, v in cached.details.items() if k not in (KEPT_OUT, KEPT_OUT_NOTE)}
    raised: list[str] = []
    for precision, rate in new.peak_flops.items():
        if precision in failed:
            continue
        old = peaks.get(precision)
        if old is None or rate > old:
            peaks[precision] = rate
            if old is not None:
                details[f"{precision}_raised"] = {"from": old, "to": rate, "where": where, "timestamp": stamp}
            else:
                details.pop(f"{precision}_omitted", None)
            raised.append(precision)
    bandwidth = cached.bandwidth_bytes_per_s
    if new.bandwidth_bytes_per_s > bandwidth:
        details["bandwidth_raised"] = {"from": bandwidth, "to": new.bandwidth_bytes_per_s, "where": where,
                                       "timestamp": stamp}
        bandwidth = new.bandwidth_bytes_per_s
        raised.append("bandwidth")
    kept = Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source=cached.source, device=cached.device,
                    details=details)
    # Shown this run: a failed precision the cache has no good figure for, with its flag.
    shown_peaks = dict(peaks)
    shown_details = dict(details)
    for precision in failed:
        if precision not in shown_peaks:
            shown_peaks[precision] = new.peak_flops[precision]
            shown_details[f"{precision}_failed"] = new.details[f"{precision}_failed"]
            shown_details.pop(f"{precision}_omitted", None)
    figures = {**{p: new.peak_flops[p] for p in new.peak_flops}, "bandwidth": new.bandwidth_bytes_per_s}
    cached_when = cached.details.get("timestamp")
    note = (f"a re-measure {_how(new)} was kept out of the cache: "
            + ", ".join(f"{p} {units.bandwidth(v) if p == 'bandwidth' else units.flop_rate(v)}"
                        for p, v in figures.items())
            + f"; the cached figures ({state(cached.details)}"
            + (f", measured {cached_when}" if cached_when else "") + ") are used"
            + (f", except {', '.join(raised)}, measured higher (interference only ever lowers a figure)"
               if raised else ""))
    shown_details[KEPT_OUT] = {"measured_while": state(new.details), "other_cores": other_cores(new.details),
                               "timestamp": stamp, "peak_flops": dict(new.peak_flops),
                               "bandwidth_bytes_per_s": new.bandwidth_bytes_per_s}
    shown_details[KEPT_OUT_NOTE] = note
    shown = Ceilings(peak_flops=shown_peaks, bandwidth_bytes_per_s=bandwidth, source=cached.source,
                     device=cached.device, details=shown_details)
    return Settled(shown, kept, replaced=False, changed=bool(raised))
