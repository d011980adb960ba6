"""How the roofline ceilings were obtained, and what they found, in words: shared by the CLI, the report and the
TUI (no torch here)."""

from __future__ import annotations

import math
from typing import Any

from planner import units

REFRESH_HINT = "run `planner detect --ceilings --refresh`"
EXCEEDED_WARNING = ("measured above the cached ceiling: the ceiling was measured while the machine was busy; "
                    + REFRESH_HINT)
"""What a user reads wherever a measurement beat the ceiling, instead of an efficiency above 100%."""


SLOWER = "_slower"
"""The details key suffix of a finding: `bf16_slower` says bf16 measured below a more precise precision."""


def slower_note(precision: str, rate: float, other: str, other_rate: float) -> str:
    """A lower precision that measured slower than a more precise one, worded as the finding it is.

    The measurement stands: on some CPUs with a bf16 or int8 ISA flag the GEMM kernels really run
    slower than fp32 (an Intel Xeon with AVX-512 BF16 but AMX hidden by its VM ran bf16 torch.mm at
    153-157 GFLOP/s against fp32's 262-272, every time), so the flag alone does not make it pay.
    """
    return (f"{precision} GEMM measured {units.flop_rate(rate)}, below {other}'s {units.flop_rate(other_rate)}: "
            f"on this CPU {precision} runs slower than {other} (measured; the ISA flag alone does not make it pay)")


def findings(details: dict[str, Any]) -> list[str]:
    """What the measurement found about the precisions' order (`<precision>_slower`), in the order recorded."""
    return [str(value) for name, value in details.items() if name.endswith(SLOWER) and value]


WIDE_SPREAD = 0.5
"""Repeats whose slowest is this much above the fastest disagree widely: the best is kept, but say so."""


def measurement_note(details: dict[str, Any]) -> str:
    """When and how the ceilings were measured, and what they found, in one line: time, repeats, spread, busy or
    idle, raises, and a lower precision that measured slower than a more precise one."""
    parts: list[str] = []
    if details.get("timestamp"):
        parts.append(f"measured {details['timestamp']}")
    if details.get("mode"):
        parts.append(f"{details['mode']} mode")
    if details.get("repeats"):
        parts.append(f"best of {details['repeats']} repeats")
    spreads = [float(v["spread"]) for v in details.values()
               if isinstance(v, dict) and isinstance(v.get("spread"), (int, float)) and math.isfinite(v["spread"])]
    if spreads:
        # A spread is (slowest - fastest) / fastest: past half, the slowest repeat took 1.5x the fastest.
        worst = max(spreads)
        parts.append(f"the slowest repeat {units.pct(worst)} above the fastest" if worst < WIDE_SPREAD
                     else f"repeats disagree widely (the slowest took {1 + worst:.1f}x the fastest)")
    state = details.get("measured_while")
    loads = [v for v in details.get("other_cores") or [] if isinstance(v, (int, float))]
    if state == "busy":
        parts.append(f"machine busy (other processes used {loads[-1]:.2f} cores) after "
                     f"{details.get('attempts', 1)} attempts: {REFRESH_HINT} on an idle machine")
    elif state == "idle":
        parts.append("machine idle" + (f" (other processes {loads[-1]:.2f} cores)" if loads else ""))
    conv = sorted(name.removesuffix("_method") for name, value in details.items()
                  if name.endswith("_method") and name != "int8_method" and value != "torch.mm")
    if conv:
        parts.append(f"{' and '.join(conv)} peak from {details[conv[0] + '_method']}, faster here than torch.mm")
    for name, value in details.items():
        if name.endswith("_raised") and isinstance(value, dict):
            figure = name.removesuffix("_raised")
            rate = units.bandwidth if figure == "bandwidth" else units.flop_rate
            parts.append(f"{figure} raised from {rate(value.get('from'))} to "
                         f"{rate(value.get('to'))}, attained by {value.get('where', 'a later run')}")
    parts += findings(details)
    return "; ".join(parts)


def warnings(details: dict[str, Any]) -> list[str]:
    """What a user must know before trusting these ceilings: figures that are not a measurement at all, a busy
    measurement, a ceiling a run beat, a measurement kept out of the cache."""
    said = [str(details[key]) for key in ("busy_note", "exceeded_note", "kept_out_note") if details.get(key)]
    if details.get("measurement_error"):
        said.insert(0, f"the ceilings could not be measured on this machine ({details['measurement_error']}): the "
                       "figures are the fallback named as their source, not a measurement, so every roofline "
                       f"figure built on them is rough; {REFRESH_HINT} once the cause is fixed")
    if details.get("gpu_measurement_error"):
        said.insert(0, f"the GPU's ceilings could not be measured ({details['gpu_measurement_error']}) and no "
                       "datasheet names it: these are the CPU's ceilings")
    return said


INT8_COUNTING = ("int8 counts integer operations (2 per multiply-add) as FLOPs, so its roof shares the float "
                 "roofs' axis")
"""Said wherever an int8 peak is shown beside the float ones."""
