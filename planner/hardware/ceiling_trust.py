"""Which ceilings to keep: a measurement taken under interference never replaces a cleaner one.

Only measured interference keeps figures out of the cache: a measurement during which the load
sampler saw other processes busy (`state` 'busy'). The rule (`settle`):

- a measurement not taken under measured interference (idle, or unknown: the load could not be
  read) replaces the cached one, figures and all (so a refresh on a quiet machine can also lower
  a figure that was wrong);
- a busy one is kept out of the cache: the cached figures are used and the details say so, except
  that, per figure, a higher new figure is kept (and cached), because interference only ever
  lowers a peak or a bandwidth: a higher figure is a real lower bound whatever the load was;
- a busy one with nothing cached is cached with its load noted (measuring again at every start on a
  machine that is always busy would cost every plan seconds and find the same), and the first
  measurement taken without interference replaces it.

Where several cached files could answer, the cleanest is read (`cleanliness`: idle, then unknown).

What a figure says is never second-guessed: a lower precision that measured slower than a more
precise one (bf16 below fp32 on a CPU with an AVX-512 BF16 flag) is a finding about this CPU,
recorded in the details (`with_order_findings`) and cached like any other figure.

No torch here: this module only compares numbers, so it is tested with made-up measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from planner import units
from planner.hardware.ceiling_notes import SLOWER, slower_note
from planner.hardware.ceiling_values import Ceilings

IDLE, UNKNOWN, BUSY = "idle", "unknown", "busy"
_RANK = {IDLE: 0, UNKNOWN: 1, BUSY: 2}

CPU_PRECISIONS = ("fp32", "bf16", "int8")
"""The CPU's measured precisions, most precise first: each is expected, not assumed, to be at least as fast as
those before it."""

KEPT_OUT = "kept_out"
KEPT_OUT_NOTE = "kept_out_note"


def slower_precisions(ceilings: Ceilings) -> dict[str, str]:
    """Each measured lower precision whose peak came out below a more precise one's, with the finding in words.

    The more precise one named is the fastest of those above it (int8 below both fp32 and bf16 is
    compared with the faster of the two).
    """
    peaks = ceilings.peak_flops
    found: dict[str, str] = {}
    for i, precision in enumerate(CPU_PRECISIONS):
        if precision not in peaks:
            continue
        faster = [(other, peaks[other]) for other in CPU_PRECISIONS[:i] if peaks.get(other, 0.0) > peaks[precision]]
        if faster:
            other, rate = max(faster, key=lambda item: item[1])
            found[precision] = slower_note(precision, peaks[precision], other, rate)
    return found


def with_order_findings(ceilings: Ceilings) -> Ceilings:
    """These ceilings with their precision-order findings (`<precision>_slower`) recomputed from their peaks.

    Recomputed, not added to: a figure raised since (a model attained more, a cleaner re-measure)
    may have changed the order, and a stale finding would then contradict the table beside it.
    """
    details = {k: v for k, v in ceilings.details.items() if not k.endswith(SLOWER)}
    details.update({f"{p}{SLOWER}": why for p, why in slower_precisions(ceilings).items()})
    return ceilings if details == ceilings.details else replace(ceilings, details=details)


def state(details: dict[str, Any]) -> str:
    """'idle', 'unknown' or 'busy': how cleanly the figures in these details were taken."""
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


def _how(ceilings: Ceilings) -> str:
    """How a busy measurement was taken, in a few words: 'under load (0.99 cores busy)'."""
    load = other_cores(ceilings.details)
    return f"under load ({load:.2f} cores busy)" if load is not None else "under load"


@dataclass(frozen=True)
class Settled:
    """What `settle` decided: the ceilings to use now, and what the cache should hold."""

    use: Ceilings
    cache: Ceilings | None  # None: nothing good enough to cache (a busy first measurement)
    replaced: bool  # the new measurement replaced the cached one (else the cached one stays, maybe raised)
    changed: bool  # the cache must be written: it replaced it, or raised a cached figure


def settle(new: Ceilings, cached: Ceilings | None) -> Settled:
    """The ceilings to use and to cache, given a new measurement and the cached one (None when none).

    See the module's rule.
    """
    if cached is None or state(new.details) != BUSY:
        return Settled(new, new, replaced=True, changed=True)
    return _kept_out(new, cached)


def _kept_out(new: Ceilings, cached: Ceilings) -> Settled:
    """A busy measurement against a cached one: the cached figures stand, each raised where the new one is higher."""
    stamp = new.details.get("timestamp")
    where = f"a re-measure {_how(new)}" + (f" at {stamp}" if stamp else "")
    peaks = dict(cached.peak_flops)
    details = {k: v for k, v in cached.details.items() if k not in (KEPT_OUT, KEPT_OUT_NOTE)}
    raised: list[str] = []
    for precision, rate in new.peak_flops.items():
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
    kept = with_order_findings(Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source=cached.source,
                                        device=cached.device, details=details))
    figures = {**{p: new.peak_flops[p] for p in new.peak_flops}, "bandwidth": new.bandwidth_bytes_per_s}
    cached_when = cached.details.get("timestamp")
    note = (f"a re-measure {_how(new)} was kept out of the cache: "
            + ", ".join(f"{p} {units.bandwidth(v) if p == 'bandwidth' else units.flop_rate(v)}"
                        for p, v in figures.items())
            + f"; the cached figures ({state(cached.details)}"
            + (f", measured {cached_when}" if cached_when else "") + ") are used"
            + (f", except {', '.join(raised)}, measured higher (interference only ever lowers a figure)"
               if raised else ""))
    shown = replace(kept, details={**kept.details, KEPT_OUT: _figures_of(new), KEPT_OUT_NOTE: note})
    return Settled(shown, kept, replaced=False, changed=bool(raised))


def _figures_of(ceilings: Ceilings) -> dict[str, Any]:
    """A kept-out measurement's figures and load, as the details record them."""
    return {"measured_while": state(ceilings.details), "other_cores": other_cores(ceilings.details),
            "timestamp": ceilings.details.get("timestamp"), "peak_flops": dict(ceilings.peak_flops),
            "bandwidth_bytes_per_s": ceilings.bandwidth_bytes_per_s}
