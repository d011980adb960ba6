"""A candidate's share of its own precision's roof: the model's FLOPs over its median time, against the
measured peak of the precision it computes in (an INT8 candidate against the INT8 roof, an fp32 one
against fp32).

The work counted is the baseline's (its FLOPs per sample, 2 per multiply-add, times the batch of one
timed call): a candidate that keeps the model's arithmetic does the same multiply-adds in another
precision. A candidate that removes work (pruning, low rank, a new architecture) gets no share, as
the baseline's count would overstate what it does. int8 operations are counted like FLOPs, as the
int8 roof is (planner.hardware.ceiling_notes.INT8_COUNTING).

No torch here: the report and the TUI read the stored share, and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner import units
from planner.hardware.ceiling_notes import REFRESH_HINT


@dataclass(frozen=True)
class RoofShare:
    """What a candidate attains against its own precision's roof."""

    precision: str  # the roof: the precision the candidate computes in
    attained_flops_per_s: float  # the baseline's FLOPs per timed call over the candidate's p50
    peak_flops_per_s: float  # the measured roof for that precision
    share: float | None  # attained over peak, at most 1; None when it attained more than the roof
    warning: str = ""  # why there is no share: above the roof, so the roof (not the candidate) is wrong


def roof_share(precision: str, p50_ms: float | None, flops_per_call: float | None,
               ceilings: Any) -> RoofShare | None:
    """The share of `precision`'s roof that `flops_per_call` in `p50_ms` attains; None when there is no such roof
    (a precision the ceilings did not measure, e.g. fp16 or ternary on a CPU) or nothing to divide.

    `ceilings` is a `Ceilings` or its JSON form (a mapping with `peak_flops`). Above the roof the share is
    None and the warning says the ceiling is wrong, as planner.hardware.ceilings.raise_exceeded does.
    """
    peaks = ceilings.get("peak_flops") if isinstance(ceilings, Mapping) else getattr(ceilings, "peak_flops", None)
    roof = str(precision).lower()
    peak = _positive(dict(peaks or {}).get(roof))
    p50 = _positive(p50_ms)
    flops = _positive(flops_per_call)
    if peak is None or p50 is None or flops is None:
        return None
    attained = flops / (p50 / 1e3)
    if attained > peak:
        return RoofShare(roof, attained, peak, None,
                         warning=(f"attains {units.flop_rate(attained)}, above the measured {roof} roof of "
                                  f"{units.flop_rate(peak)}: that roof is too low (measured under load, or this "
                                  "runtime's kernels beat the planner's GEMM test); "
                                  f"{REFRESH_HINT} on an idle machine"))
    return RoofShare(roof, attained, peak, attained / peak)


def flops_per_call(flops_per_sample: float | None, input_shape: tuple[int, ...] | list[int]) -> float | None:
    """The FLOPs of one timed call: per sample times the batch (the first input's first dimension)."""
    if not flops_per_sample:
        return None
    batch = input_shape[0] if input_shape else 1
    return float(flops_per_sample) * (batch if isinstance(batch, int) and batch > 0 else 1)


def candidate_roof_share(baseline: Any, precision: str, p50_ms: float | None, *,
                         same_work: bool = True) -> RoofShare | None:
    """A candidate's share of its own precision's roof, counting the baseline's work (a `Baseline`: its FLOPs per
    sample, first input's shape and ceilings); None for a candidate that does not do the same work."""
    if not same_work or baseline is None:
        return None
    return roof_share(precision, p50_ms, flops_per_call(baseline.flops_per_sample, baseline.input_shape),
                      baseline.ceilings)


def phrase(share: RoofShare | Mapping[str, Any] | None) -> str:
    """'7.2% of the INT8 roof (149 GFLOP/s of 2.06 TFLOP/s)', the warning above the roof, or '' when none."""
    if share is None:
        return ""
    get = share.get if isinstance(share, Mapping) else lambda name: getattr(share, name, None)
    roof = str(get("precision") or "").upper()
    if not roof:
        return ""
    if get("warning"):
        return f"{roof} roof: {get('warning')}"
    value = _positive(get("share"))
    if value is None:
        return ""
    return (f"{units.pct(min(value, 1.0))} of the {roof} roof ({units.flop_rate(get('attained_flops_per_s'))} "
            f"of {units.flop_rate(get('peak_flops_per_s'))})")


def _positive(value: Any) -> float | None:
    """A positive finite number, else None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None
