"""Number provenance for report tests: perturb every number in a results dict, extract number
tokens from Markdown, and find tokens that stayed the same (numbers not taken from results.json).

Method. The report is rendered twice: from the fixture, and from a copy in which every number
has been changed by a strictly increasing, non-linear map (so ratios and sums of perturbed
numbers change too, and the order of values is kept, so the report keeps its structure). Numbers
inside strings (labels, explanations, reproduce commands, dates) are changed the same way, and so
are dict keys, so look-ups by layer name still match. The two renders are compared line by line
and token by token: a token that is identical at the same place in both renders did not come
from results.json, i.e. a template wrote it.

What counts as a number token: a run of digits (with inner `.` or `,` groups) that does not
continue an identifier. So `p95`, `fp32`, `avx512f`, `x86_64`, `conv1`, `CI95` and `top-1` are
names, not numbers, and are not checked; `2.5 ms`, `41%`, `1.33×`, `1,024` and `#2` are checked.

Structural exclusions (documented, and the only ones):
* the ordinal that starts a Markdown ordered-list item (`1. `, `2. `) at the start of a line;
* the roadmap's phase numbers (`Phase 1`, `Phase 2`, `Phase 3`): the roadmap's phase names;
* the sample count a tail percentile needs (`needs ≥128 samples`): a rule of the measuring
  method (planner.measure.stats.PERCENTILE_MIN_SAMPLES), not a measurement of this run;
* a candidate's rank in the candidates table (`| 1 | **label** |`): its position in the
  ranking's order, like a list ordinal, not a stored number;
* the results.json schema version the report states: the layout the reader upgraded the file
  to (planner.results.SCHEMA_VERSION), not a measurement;
* the Summary's candidate counts (`**Candidates**: 3 measured, 1 failed`): how many of results.json's
  rows have each status (planner.results.counts), counted like list ordinals, not stored numbers.
Years in dates need no exclusion: dates are strings in results.json and are perturbed with them.
Three values are left unperturbed because they are codes, not measurements: `best` (an index
into the candidate list, never printed), a plan step's `phase` (which roadmap phase it belongs
to; the phase numbers are excluded above anyway) and `schema_version` (which results.json layout
the reader upgrades from; a perturbed one is a layout no reader knows).
"""

from __future__ import annotations

import math
import re
from typing import Any

from planner.measure.stats import PERCENTILE_MIN_SAMPLES

# A number token: digits not glued to a preceding identifier character, nor after "letter-".
TOKEN = re.compile(r"(?<![\w.])(?<![A-Za-z]-)\d+(?:[.,]\d+)*")
# Digit runs inside strings that the perturbation rewrites: every run not glued to a letter or
# another digit, which covers the first digit run of every TOKEN.
_STRING_DIGITS = re.compile(r"(?<![A-Za-z_\d])\d+")

_ORDINAL = re.compile(r"^(\s*)\d+\.(?=\s)")
_PHASE = re.compile(r"\bPhase \d+\b")
_NEEDS = re.compile(r"needs ≥(\d+) samples")
# A rank cell: a table row whose first cell is a number and whose second is a candidate label
# (text, maybe bold); batch and layer tables start with a batch size followed by a time, or a name.
_RANK = re.compile(r"^\|\s*\d+\s*\|(?=\s*(?:\*\*)?[A-Za-z])")
_SCHEMA = re.compile(r"results\.json schema version: \d+")
_COUNTS = re.compile(r"^- \*\*Candidates\*\*: [^;]*")

UNPERTURBED_KEYS = frozenset({"best", "phase", "schema_version"})
"""Keys whose values are codes (an index, a roadmap phase, a file layout), not measurements."""


def perturb_int(n: int) -> int:
    """A strictly increasing map of the non-negative integers that moves every value."""
    if n < 0:
        return -perturb_int(-n)
    return round(1.37 * n ** 1.07) + 3


def perturb_float(x: float) -> float:
    """A strictly increasing, non-linear map that moves every finite value (0 included)."""
    if not math.isfinite(x):
        return x
    if x < 0:
        return -perturb_float(-x)
    return 1.37 * x ** 1.07 + 0.0371


def perturb_text(s: str) -> str:
    """The string with every free-standing digit run perturbed as an integer."""
    return _STRING_DIGITS.sub(lambda m: str(perturb_int(int(m.group()))), s)


def perturb(value: Any, key: str = "") -> Any:
    """A deep copy of a results value with every number (and number in a string) perturbed."""
    if key in UNPERTURBED_KEYS:
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return perturb_int(value)
    if isinstance(value, float):
        return perturb_float(value)
    if isinstance(value, str):
        return perturb_text(value)
    if isinstance(value, list):
        return [perturb(v) for v in value]
    if isinstance(value, dict):
        return {perturb_text(k) if isinstance(k, str) else k: perturb(v, k) for k, v in value.items()}
    return value


def strip_structural(line: str) -> str:
    """The line without the documented structural numbers."""
    line = _ORDINAL.sub(r"\1", line)
    line = _PHASE.sub("Phase", line)
    line = _RANK.sub("| |", line)
    line = _SCHEMA.sub("results.json schema version:", line)
    line = _COUNTS.sub(lambda m: re.sub(r"\d+", "", m.group()), line)
    allowed = set(PERCENTILE_MIN_SAMPLES.values())
    return _NEEDS.sub(lambda m: "needs samples" if int(m.group(1)) in allowed else m.group(), line)


def tokens(line: str) -> list[str]:
    """The number tokens of one line, after removing structural ones."""
    return TOKEN.findall(strip_structural(line))


def literal_numbers(original: str, perturbed: str) -> list[str]:
    """Every place where a number is the same in both renders (each a readable description).

    Raises AssertionError when the renders differ in structure (line or token counts), since
    then the comparison would not be position by position.
    """
    a, b = original.splitlines(), perturbed.splitlines()
    assert len(a) == len(b), f"renders differ in length: {len(a)} vs {len(b)} lines"
    found = []
    for i, (la, lb) in enumerate(zip(a, b), 1):
        ta, tb = tokens(la), tokens(lb)
        assert len(ta) == len(tb), f"line {i} has {len(ta)} vs {len(tb)} numbers:\n  {la}\n  {lb}"
        found += [f"line {i}: {x!r} in {la!r}" for x, y in zip(ta, tb) if x == y]
    return found
