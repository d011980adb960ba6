"""Number and text formatting for the report: values with units, Markdown-safe cells and tables.

Every helper takes a value read from results.json and returns text; a missing value becomes
"not measured" (or a caller-supplied `missing=` reason) instead of a made-up number. Units and
rounding are planner.units' (one policy for every surface); this module adds what only
Markdown needs.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable

from planner import units
from planner.results import fidelity_view
from planner.results.values import CandidateResult

if TYPE_CHECKING:
    from planner.results.view import InputView

NOT_MEASURED = units.NOT_MEASURED
"""What the report prints where results.json holds no value."""


def real(value: Any) -> float | None:
    """The value as a finite-or-infinite float, or None when it is not a number (bools excluded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if math.isnan(value):
        return None
    return float(value)


def _prose(formatter: Callable[..., str]) -> Callable[..., str]:
    """A planner.units formatter that writes "not measured" for a missing value, as prose reads."""
    return functools.partial(formatter, missing=NOT_MEASURED)


# The report's unit formatters are planner.units' own, so a value prints here exactly as it
# does in the CLI, the TUI and the advice text; only the text for a missing value differs.
ms = _prose(units.ms)
seconds = _prose(units.seconds)
size = _prose(units.size)
flops = _prose(units.flops)
flop_rate = _prose(units.flop_rate)
bandwidth = _prose(units.bandwidth)
pct = _prose(units.pct)
accuracy = _prose(units.accuracy)
speedup = _prose(units.speedup)
rate = _prose(units.rate)
ratio = _prose(units.ratio)
cosine = _prose(units.cosine)
tokens_rate = _prose(units.tokens_rate)


def number(value: Any, missing: str = NOT_MEASURED) -> str:
    """Any value from results.json: ints with separators, floats under the units rounding policy."""
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "unbounded" if value > 0 else missing
        return units.sig(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(number(v, missing) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{k} {number(v, missing)}" for k, v in value.items()) if value else "none"
    return str(value)


def tensor(inp: "InputView", *, values: bool = True) -> str:
    """One model input: '`input_ids` int64 [batch=1, sequence=64], values integers in [0, 1000)'."""
    line = " ".join(part for part in (code(inp.name), inp.dtype, f"[{inp.dims}]") if part)
    if not values and inp.value is not None:
        return f"{line} fixed at {inp.value}"  # a sample rate's value is part of what the model was fed
    return line + (f", values {inp.values}" if values and inp.values else "")


def series(items: list[str]) -> str:
    """Items joined as prose: 'a', 'a and b', 'a, b and c'."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


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



_GATE = re.compile(r"(?:\(gate|< gate) ([0-9.]+)")


def fidelity_rule(candidates: Iterable[CandidateResult]) -> str:
    """The fidelity check in plain words, for the report's first use of the term.

    The thresholds are the ones this run's candidates recorded (in their fidelity verdict or
    rejection reason), per precision; the report does not restate the engine's settings itself.
    """
    candidates = tuple(candidates)
    seen: dict[str, str] = {}
    for cand in candidates:
        for where in (cand.fidelity.decided_by if cand.fidelity is not None else "", cand.reason):
            match = _GATE.search(where)
            if match and "cosine" in where:
                seen.setdefault(cand.precision or "fp32", match.group(1))
    by_kind = fidelity_view.rule(candidates)
    if by_kind:  # a dense map, a sequence or a regression output: its own test, never top-1
        return by_kind
    rule = ("each candidate's outputs are compared with the original model's on the same "
            "fixed inputs; it passes when their cosine similarity reaches the threshold for its precision")
    if seen:
        rule += " (here " + ", ".join(f"{gate} for {prec}" for prec, gate in sorted(seen.items())) + ")"
    if any(c.fidelity is not None and c.fidelity.centered_cosine is not None for c in candidates):
        # Recorded since the input-dependent part was compared; older results read as they were judged.
        rule += (", both on the outputs as they are and on the part of them that depends on the input (each output "
                 "minus the original's mean output over the inputs: with random weights most of an output can be "
                 "the same for every input); where that part is too small to test, the check cannot judge and a "
                 "candidate that changes the arithmetic is not established")
    return (rule + ", the top-1 class agrees where the output is a classification, and the accuracy drop "
            "stays within the budget where labelled data measures accuracy")


def plain_reason(reason: str) -> str:
    """A recorded reason in the report's words.

    'fidelity gate: x < gate y' reads 'fidelity check: x, below the y needed'.
    """
    reason = reason.replace("fidelity gate", "fidelity check")
    reason = re.sub(r"\(gate ([0-9.]+)\)", r"(at least \1 needed)", reason)
    return re.sub(r"(\S+) < gate (\S+)", r"\1, below the \2 needed", reason)
