"""Number and text formatting for the report: units, percentages, Markdown-safe cells.

Every helper takes a value read from results.json and returns text; a missing value becomes
"not measured" (or a caller-supplied reason) instead of a made-up number. The unit thresholds
below only choose how a value is written (ms or µs, MB or GB), never what it is.
"""

from __future__ import annotations

import json
import math
from typing import Any

NOT_MEASURED = "not measured"
"""What the report prints where results.json holds no value."""


def real(value: Any) -> float | None:
    """The value as a finite-or-infinite float, or None when it is not a number (bools excluded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if math.isnan(value):
        return None
    return float(value)


def integer(value: Any) -> int | None:
    """The value as an int when it is a whole number, else None."""
    v = real(value)
    if v is None or not math.isfinite(v) or v != int(v):
        return None
    return int(v)


def ms(value: Any, missing: str = NOT_MEASURED) -> str:
    """Milliseconds with a precision that suits the magnitude (µs below 10 µs)."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f} ms"
    if a >= 100:
        return f"{v:.1f} ms"
    if a >= 1:
        return f"{v:.2f} ms"
    if a >= 0.01:
        return f"{v:.3f} ms"
    return f"{v * 1e3:.2f} µs"


def seconds(value: Any, missing: str = NOT_MEASURED) -> str:
    """Seconds, or milliseconds/microseconds for short times."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    if abs(v) >= 1:
        return f"{v:.2f} s"
    return ms(v * 1e3, missing)


def size(value: Any, missing: str = NOT_MEASURED) -> str:
    """Bytes in binary units (KiB, MiB, GiB), as the requirement checks write them."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(v) >= scale:
            return f"{v / scale:.2f} {unit}" if scale == 1 << 30 else f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def count(value: Any, unit: str, missing: str = NOT_MEASURED) -> str:
    """A count with an SI prefix, e.g. '4.80 GFLOP' or '12.3 kB/s'."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.2f} {prefix}{unit}"
    return f"{v:.0f} {unit}"


def flops(value: Any, missing: str = NOT_MEASURED) -> str:
    """FLOPs (2 per multiply-add) with an SI prefix."""
    return count(value, "FLOP", missing)


def flop_rate(value: Any, missing: str = NOT_MEASURED) -> str:
    """FLOP/s with an SI prefix."""
    return count(value, "FLOP/s", missing)


def bandwidth(value: Any, missing: str = NOT_MEASURED) -> str:
    """Bytes per second in GB/s (MB/s when small)."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    if abs(v) >= 1e9:
        return f"{v / 1e9:.1f} GB/s"
    return f"{v / 1e6:.1f} MB/s"


def pct(value: Any, digits: int = 1, missing: str = NOT_MEASURED) -> str:
    """A fraction as a percentage."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    return f"{v * 100:.{digits}f}%"


def times(value: Any, missing: str = NOT_MEASURED) -> str:
    """A ratio such as a speedup, e.g. '1.33×'."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    return f"{v:.2f}×"


def rate(value: Any, missing: str = NOT_MEASURED) -> str:
    """Samples per second."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    if abs(v) >= 100:
        return f"{v:,.0f} samples/s"
    return f"{v:.2f} samples/s"


def ratio(value: Any, missing: str = NOT_MEASURED) -> str:
    """A dimensionless value such as an intensity in FLOP/byte."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 1 else f"{v:.2f}"


def cosine(value: Any, missing: str = NOT_MEASURED) -> str:
    """A cosine similarity with enough digits to tell 0.9999 from 0.99999 (and never round to 1)."""
    v = real(value)
    if v is None or not math.isfinite(v):
        return missing
    digits = 5
    # Show digits until a value below 1 no longer prints as 1.00000, so "exact" is never implied.
    while v < 1.0 and round(v, digits) >= 1.0 and digits < 12:
        digits += 1
    return f"{v:.{digits}f}"


def number(value: Any, missing: str = NOT_MEASURED) -> str:
    """Any value from results.json: ints with separators, floats to four significant digits."""
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "unbounded" if value > 0 else missing
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(number(v, missing) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{k} {number(v, missing)}" for k, v in value.items()) if value else "none"
    return str(value)


def shape(value: Any, missing: str = "unknown") -> str:
    """A tensor shape as '1×3×224×224'."""
    if isinstance(value, (list, tuple)) and value:
        return "×".join(str(d) for d in value)
    return missing


def cell(value: Any) -> str:
    """Text that is safe inside a Markdown table cell (no pipes or line breaks)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ").strip()


def code(value: Any) -> str:
    """Inline code for a name (table() escapes any pipe in it)."""
    text = (value if isinstance(value, str) else str(value)).replace("`", "'")
    text = " ".join(text.split())
    return f"`{text}`" if text else ""


def compact(value: Any) -> str:
    """A config dict or list as compact JSON for one line of text."""
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table as lines."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines
