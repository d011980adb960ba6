"""Units and the one rounding policy: how every number with a unit is written, everywhere.

The CLI, the TUI, the advice text and the Markdown report all format numbers through this
module, so one measured value prints the same on every surface (50 ms is "50 ms" in each).

The policy, applied by `sig()`:

* Three significant figures, then trailing zeros dropped, so a round value reads as people
  write it: 412 → "412", 38.24 → "38.2", 50 → "50", 1.25 → "1.25", 2.004 → "2",
  0.04271 → "0.0427". Small values (sub-millisecond latencies) keep their leading digits
  instead of rounding to "0.00".
* From 1,000 up, whole numbers with thousands separators and no decimals:
  27489.3 → "27,489". Such values already carry more than three significant figures.
* Zero is "0"; a negative value is written like its magnitude with a minus sign.
* Rounding happens once, on the value in its printed unit (a value that rounds up across a
  power of ten, such as 999.7, is written "1,000").

Units, each with one function:

* latency: `ms()` in milliseconds, always ms (no switch to µs or s, so values compare by eye);
  `seconds()` for wall-clock durations of whole runs;
* memory: `size()` in binary units B, KiB, MiB, GiB, TiB (1 KiB = 1,024 B), as RAM and model
  files are sized; `mib()` gives the bare number for a table column titled in MiB;
* throughput: `rate()` in samples/s;
* work and speed: `flops()` with an SI prefix (kFLOP, MFLOP, GFLOP, TFLOP) and `flop_rate()`
  in FLOP/s;
* bandwidth: `bandwidth()` in decimal bytes per second (MB/s, GB/s), as bandwidth is quoted;
* ratios: `speedup()` as "1.85x", `pct()` for a fraction as a percentage ("38.7%"), `ratio()`
  for a bare dimensionless value such as arithmetic intensity;
* counts: `count()` for whole numbers such as parameters ("25,557,032").

Two values are deliberately written with more digits than the policy, because their meaning
lives in the small differences: `accuracy()` (two decimals of a percent, the resolution a
fidelity threshold is checked at) and `cosine()` (enough digits that a value below 1 never
prints as 1).

A value that is missing (None, NaN, not a number, or infinite) prints as the caller's `missing`
text: "—" by default (tables and panes), or `NOT_MEASURED` where prose reads better. Booleans
are never numbers here.
"""

from __future__ import annotations

import math
from typing import Any

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

MISSING = "—"
"""What a table cell or pane shows where no value was measured."""

NOT_MEASURED = "not measured"
"""What prose (the report) says where no value was measured."""

SIGNIFICANT = 3
"""Significant figures every formatted value keeps (the rounding policy)."""

_BINARY_PREFIXES = ((TIB, "Ti"), (GIB, "Gi"), (MIB, "Mi"), (KIB, "Ki"))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def finite(value: Any) -> float | None:
    """The value as a finite float, or None for missing values, NaN, infinities, booleans and non-numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def whole(value: Any) -> int | None:
    """The value as an int when it is a finite whole number (2.0 is 2), else None: 2.5 is not a count."""
    v = finite(value)
    return int(v) if v is not None and v == int(v) else None


def sig(value: Any, *, missing: str = MISSING) -> str:
    """A bare number under the rounding policy: '412', '38.2', '50', '0.0427', '27,489'."""
    v = finite(value)
    if v is None:
        return missing
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    decimals = max(SIGNIFICANT - 1 - math.floor(math.log10(a)), 0)
    rounded = round(a, decimals)
    # Rounding can carry into the next power of ten (9.996 → 10.0): one fewer decimal then.
    if decimals and rounded >= 10 ** (SIGNIFICANT - decimals):
        decimals -= 1
        rounded = round(a, decimals)
    if rounded >= 10**SIGNIFICANT:
        return f"{sign}{rounded:,.0f}"
    if rounded == 0:
        return "0"
    text = f"{rounded:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{sign}{text}"


def _with_unit(value: Any, unit: str, *, show_unit: bool, missing: str) -> str:
    """sig(value) followed by its unit, or alone when the column title names the unit."""
    text = sig(value, missing=missing)
    if text == missing or not show_unit:
        return text
    return f"{text} {unit}"


def ms(value: Any, *, unit: bool = True, missing: str = MISSING) -> str:
    """A latency in milliseconds: '412 ms', '50 ms', '0.0427 ms' (bare number when unit=False)."""
    return _with_unit(value, "ms", show_unit=unit, missing=missing)


def seconds(value: Any, *, missing: str = MISSING) -> str:
    """A duration in seconds ('12.5 s'), written in ms below one second so short times keep their digits."""
    v = finite(value)
    if v is None:
        return missing
    if abs(v) >= 1:
        return f"{sig(v)} s"
    return ms(v * 1e3, missing=missing)


_JOULE_SCALES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def joules(value: Any, *, missing: str = MISSING) -> str:
    """An energy: '1.2 J', '38.2 mJ', '412 µJ', '90 nJ'."""
    return _scaled(value, _JOULE_SCALES, "J", below="", missing=missing)


def _scaled(value: Any, scales: tuple[tuple[float, str], ...], unit: str, *, below: str, missing: str) -> str:
    """The value in the largest scale it reaches ('44.7 MiB', '4.8 GFLOP'); `below` formats smaller ones."""
    v = finite(value)
    if v is None:
        return missing
    for scale, prefix in scales:
        if abs(v) >= scale:
            return f"{sig(v / scale)} {prefix}{unit}"
    return f"{format(v, below)} {unit}" if below else f"{sig(v)} {unit}"


def size(value: Any, *, missing: str = MISSING) -> str:
    """A byte count in binary units: '512 B', '1.5 KiB', '44.7 MiB', '1 GiB'."""
    return _scaled(value, _BINARY_PREFIXES, "B", below=",.0f", missing=missing)


def mib(value: Any, *, missing: str = MISSING) -> str:
    """A byte count as a bare number of MiB, for a column titled in MiB: '744', '1,536'."""
    v = finite(value)
    return missing if v is None else sig(v / MIB)


def rate(value: Any, *, unit: bool = True, missing: str = MISSING) -> str:
    """A throughput in samples per second: '27,489 samples/s', '8.4 samples/s'."""
    return _with_unit(value, "samples/s", show_unit=unit, missing=missing)


def tokens_rate(value: Any, *, unit: bool = True, missing: str = MISSING) -> str:
    """A text model's throughput in tokens per second: '76,855 tokens/s'."""
    return _with_unit(value, "tokens/s", show_unit=unit, missing=missing)


def si(value: Any, unit: str, *, missing: str = MISSING) -> str:
    """A quantity with an SI prefix chosen by size: si(4.8e9, 'FLOP') → '4.8 GFLOP'."""
    return _scaled(value, _SI, unit, below="", missing=missing)


def flops(value: Any, *, missing: str = MISSING) -> str:
    """Floating-point operations (2 per multiply-add): '1.03 MFLOP', '4.1 GFLOP'."""
    return si(value, "FLOP", missing=missing)


def flop_rate(value: Any, *, missing: str = MISSING) -> str:
    """Compute speed in FLOP/s: '67.1 GFLOP/s', '1.2 TFLOP/s'."""
    return si(value, "FLOP/s", missing=missing)


def bandwidth(value: Any, *, missing: str = MISSING) -> str:
    """Bytes per second in decimal units, as bandwidth is quoted: '25.6 GB/s', '512 MB/s'."""
    return si(value, "B/s", missing=missing)


def pct(value: Any, *, missing: str = MISSING) -> str:
    """A fraction as a percentage: 0.387 → '38.7%', 1.0 → '100%', 0.05 → '5%'."""
    v = finite(value)
    return missing if v is None else f"{sig(v * 100)}%"


def accuracy(value: Any, *, missing: str = MISSING) -> str:
    """An accuracy fraction as a percentage with two decimals ('97.53%'): the resolution thresholds are read at."""
    v = finite(value)
    return missing if v is None else f"{v * 100:.2f}%"


def speedup(value: Any, *, missing: str = MISSING) -> str:
    """A speed-up (or slow-down) factor: '1.85x', '70.4x', '704x', '0.912x'."""
    v = finite(value)
    return missing if v is None else f"{sig(v)}x"


def ratio(value: Any, *, missing: str = MISSING) -> str:
    """A bare dimensionless value, such as an arithmetic intensity in FLOP/byte: '12.3', '1,024'."""
    return sig(value, missing=missing)


def count(value: Any, *, missing: str = MISSING) -> str:
    """A whole-number count with thousands separators: '25,557,032' (non-integers follow sig())."""
    v = finite(value)
    if v is None:
        return missing
    return f"{int(v):,}" if v == int(v) else sig(v)


_COSINE_NOISE = 1e-9


def cosine(value: Any, *, missing: str = MISSING) -> str:
    """A cosine similarity with enough digits that 0.99999 is told from 0.9999 and never rounds to 1."""
    v = finite(value)
    if v is None:
        return missing
    digits = 5
    # More digits until a value below 1 no longer prints as 1.00000, so "exact" is never implied;
    # a gap from 1 within float rounding (1 - 2e-16 from a dot product of equal vectors) is 1.
    while 1.0 - v > _COSINE_NOISE and round(v, digits) >= 1.0:
        digits += 1
    return f"{v:.{digits}f}"
