"""Number formatting shared by the TUI's panes: every value comes from the engine, only its text is made here."""

from __future__ import annotations

from typing import Any

from planner.hardware.render import format_bytes

MISSING = "—"


def num(value: Any) -> float | None:
    """A finite float, or None for missing values, booleans and non-numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def ms(value: Any, *, unit: bool = True) -> str:
    """A latency in ms with precision that suits its size: '412', '38.2', '1.25', '0.0427'."""
    v = num(value)
    if v is None:
        return MISSING
    if v >= 100:
        text = f"{v:,.0f}"
    elif v >= 10:
        text = f"{v:.1f}"
    elif v >= 1:
        text = f"{v:.2f}"
    else:
        text = f"{v:.3g}"
    return f"{text} ms" if unit else text


def rate(value: Any, *, unit: bool = True) -> str:
    """A throughput in samples/s: '27,489' or '8.4'."""
    v = num(value)
    if v is None:
        return MISSING
    text = f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    return f"{text} samples/s" if unit else text


def size(value: Any) -> str:
    """A byte count in binary units ('744 MiB'); a dash when unknown."""
    v = num(value)
    return MISSING if v is None else format_bytes(int(v))


def mib(value: Any) -> str:
    """A byte count as a plain MiB number for table columns ('744')."""
    v = num(value)
    return MISSING if v is None else f"{v / 2**20:,.0f}"


def flops(value: Any) -> str:
    """A FLOP count with an SI prefix: '1.03 MFLOP', '4.2 GFLOP'."""
    v = num(value)
    if v is None:
        return MISSING
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}FLOP"
    return f"{v:.0f} FLOP"


def gflops(value: Any) -> str:
    """A FLOP count in GFLOP for the layer table's column (3 significant digits)."""
    v = num(value)
    return MISSING if v is None else f"{v / 1e9:.3g}"


def flops_rate(value: Any) -> str:
    """A FLOP/s figure with an SI prefix: '67.1 GFLOP/s'."""
    v = num(value)
    return MISSING if v is None else flops(v) + "/s"


def bandwidth(value: Any) -> str:
    """Bytes per second as GB/s (decimal, as bandwidth is usually quoted)."""
    v = num(value)
    return MISSING if v is None else f"{v / 1e9:.3g} GB/s"


def pct(value: Any, digits: int = 0) -> str:
    """A fraction as a percentage: 0.387 → '39%'."""
    v = num(value)
    return MISSING if v is None else f"{v * 100:.{digits}f}%"


def speedup(value: Any) -> str:
    """A speed-up factor in at most 5 characters: '8.16x', '70.4x', '704x'."""
    v = num(value)
    if v is None:
        return MISSING
    if v >= 100:
        return f"{v:.0f}x"
    return f"{v:.1f}x" if v >= 10 else f"{v:.2f}x"


def best_rate(candidate: dict) -> float | None:
    """The highest samples/s over a candidate's batch sweep, or None when none was measured."""
    rates = [num(p.get("samples_per_s")) for p in candidate.get("throughput") or []]
    rates = [r for r in rates if r is not None]
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
