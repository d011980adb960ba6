"""How the roofline ceilings were obtained, in words: shared by the CLI, the report and the TUI (no torch here)."""

from __future__ import annotations

import math
from typing import Any

from planner import units

REFRESH_HINT = "run `planner detect --ceilings --refresh`"
EXCEEDED_WARNING = ("measured above the cached ceiling: the ceiling was measured while the machine was busy; "
                    + REFRESH_HINT)
"""What a user reads wherever a measurement beat the ceiling, instead of an efficiency above 100%."""


def measurement_note(details: dict[str, Any]) -> str:
    """When and how the ceilings were measured, in one line: time, repeats, spread, busy or idle, raises."""
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
        parts.append(f"repeats within {units.pct(max(spreads))} of each other" if max(spreads) < 10
                     else "repeats disagree widely")
    state = details.get("measured_while")
    loads = [v for v in details.get("other_cores") or [] if isinstance(v, (int, float))]
    if state == "busy":
        parts.append(f"machine busy (other processes used {loads[-1]:.2f} cores) after "
                     f"{details.get('attempts', 1)} attempts: {REFRESH_HINT} on an idle machine")
    elif state == "idle":
        parts.append("machine idle" + (f" (other processes {loads[-1]:.2f} cores)" if loads else ""))
    for name, value in details.items():
        if name.endswith("_raised") and isinstance(value, dict):
            parts.append(f"{name.removesuffix('_raised')} raised from {units.flop_rate(value.get('from'))} to "
                         f"{units.flop_rate(value.get('to'))}, attained by {value.get('where', 'a later run')}")
    return "; ".join(parts)
