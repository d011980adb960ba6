"""Text helpers shared by the TUI's panes: unit formatters (planner.units') and cutting text to fit a column."""

from __future__ import annotations

from planner import units

MISSING = units.MISSING

# The panes format through planner.units, so a value reads the same here as in the CLI, the
# report and the advice text; a missing value is a dash, which keeps table columns narrow.
num = units.finite
ms = units.ms
rate = units.rate
size = units.size
mib = units.mib
flops = units.flops
flops_rate = units.flop_rate
bandwidth = units.bandwidth
pct = units.pct
speedup = units.speedup
sig = units.sig
ratio = units.ratio
cosine = units.cosine
accuracy = units.accuracy
count = units.count


def best_rate(candidate: dict) -> float | None:
    """The highest samples/s over a candidate's batch sweep and parallel streams, or None when none was measured."""
    points = [*(candidate.get("throughput") or []), *(candidate.get("streams") or [])]
    rates = [r for p in points if (r := num(p.get("samples_per_s"))) is not None]
    return max(rates) if rates else None


def truncate(text: str, width: int) -> str:
    """Cut text to `width` characters, ending in an ellipsis when cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def truncate_middle(text: str, width: int) -> str:
    """Cut the middle out of text, keeping both ends (candidate labels differ at their ends)."""
    if len(text) <= width:
        return text
    head = max((width - 1) // 3, 1)
    tail = max(width - 1 - head, 0)
    return text[:head] + "…" + (text[-tail:] if tail else "")
