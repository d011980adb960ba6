"""Energy per inference in words, read leniently from results.json (or the typed records).

The report, the TUI and the CLI show each candidate's joules per inference beside its p50 through
`energy_cell`, never blank: a figure, or 'unavailable', 'below resolution', 'invalid', 'not covered'
(the counter does not see the candidate's device), or 'not recorded' (a file written before energy
was measured). `energy_note` is the one footnote that says where the figures come from, or why
there are none and what would make a counter readable. Nothing here estimates from a TDP.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from planner import units
from planner.codec import to_data
from planner.results.energy_values import EnergyStatus
from planner.results.view import as_dict, as_list, number, text

NOT_RECORDED = "not recorded"
"""A candidate from a file written before energy was measured."""
NOT_MEASURED = "not measured"
"""A candidate that was never timed (skipped, failed): no window to meter."""
HEADER = "J/inference"


def _plain(value: Any) -> dict:
    """A typed record's results.json form; a dict as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_dict(to_data(value))
    return as_dict(value)


def joules(value: Any, *, missing: str = units.MISSING) -> str:
    """An energy: '1.2 J', '38.2 mJ', '412 µJ' (nJ below a microjoule)."""
    return units.joules(number(value), missing=missing)


def _timed(candidate: Any) -> bool:
    """Whether the candidate's latency was measured (one that was not has no energy figure either)."""
    return bool(as_dict(_plain(candidate).get("latency_ms")))


def energy_of(candidate: Any) -> dict:
    """A candidate's energy record ({} when it has none)."""
    return _plain(_plain(candidate).get("energy"))


def energy_cell(candidate: Any) -> str:
    """The J/inference cell: '38.2 mJ', or the status in a word or two (never blank)."""
    energy = energy_of(candidate)
    if not energy:
        return NOT_RECORDED if _timed(candidate) else NOT_MEASURED
    status = text(energy.get("status"))
    if status == EnergyStatus.MEASURED:
        return joules(energy.get("joules"), missing="invalid")
    return status or str(EnergyStatus.UNAVAILABLE)


SHORT = {EnergyStatus.BELOW_RESOLUTION: "<res", EnergyStatus.INVALID: "inval", EnergyStatus.UNAVAILABLE: "n/a",
         EnergyStatus.NOT_COVERED: "n/cov"}
"""Marks for a narrow column (the TUI's, the CLI's): the details or the closing lines say why."""
SHORT_HEADER = "mJ/inf"


def short_cell(candidate: Any) -> str:
    """A narrow column's cell: millijoules per inference as a bare number, or a mark ('n/a', '<res', ...)."""
    energy = energy_of(candidate)
    if not energy:
        return "n/rec" if _timed(candidate) else units.MISSING
    status = text(energy.get("status"))
    if status == EnergyStatus.MEASURED:
        return units.sig((number(energy.get("joules")) or 0.0) * 1e3)
    return SHORT.get(EnergyStatus(status), status[:5]) if status in tuple(EnergyStatus) else status[:5] or "n/a"


def cell_phrase(candidate: Any) -> str:
    """The cell in running text: '38.2 mJ/inference', or 'J/inference unavailable' (never blank)."""
    cell = energy_cell(candidate)
    return f"{cell}/inference" if text(energy_of(candidate).get("status")) == EnergyStatus.MEASURED \
        else f"{HEADER} {cell}"


def energy_value(candidate: Any) -> float | None:
    """Joules per inference when measured, else None (for sorting and plots)."""
    energy = energy_of(candidate)
    return number(energy.get("joules")) if text(energy.get("status")) == EnergyStatus.MEASURED else None


def source_of(results: Any) -> dict:
    """The plan's energy source ({} in files written before energy was measured)."""
    data = _plain(results)
    return _plain(as_dict(data.get("baseline")).get("energy_source"))


def energy_line(source: Any) -> str:
    """The energy counter in one line: what it measures and the idle power, or 'unavailable: why' and the fix."""
    return f"energy per inference: {source_words(source)}"


def source_words(source: Any) -> str:
    """energy_line without its lead: '<scope> energy from <source> (...), net of idle ...' or 'unavailable: ...'."""
    src = _plain(source)
    if not src:
        return f"{NOT_RECORDED} (this plan was made before energy was measured)"
    if not src.get("available"):
        fix = text(src.get("fix"))
        return (f"unavailable: {text(src.get('reason')) or 'no energy counter'}"
                + (f". To make it readable: {fix}" if fix else "") + ". Never estimated from a TDP.")
    detail = text(src.get("detail"))
    return (f"{text(src.get('scope'))} energy from {text(src.get('source'))}"
            + (f" ({detail})" if detail else "")
            + f", net of idle {units.sig(src.get('idle_w'))} W (measured over "
            f"{units.seconds(src.get('idle_window_s'))} before the baseline, halves "
            f"{units.sig(src.get('idle_spread_w'))} W apart)")


def energy_note(results: Any, candidates: Any = None) -> str:
    """The table's one footnote on J/inference: where the figures come from (or why there are none), and why any
    candidate has no figure. `candidates` defaults to the plan's."""
    data = _plain(results)
    cands = [_plain(c) for c in as_list(candidates if candidates is not None else data.get("candidates"))]
    parts = [source_words(source_of(data))]
    src = source_of(data)
    if src.get("available"):
        parts.append("per call at the model's batch, over each candidate's latency timing (warm-up included)")
    reasons: dict[str, list[str]] = {}
    for cand in cands:
        energy = energy_of(cand)
        status = text(energy.get("status"))
        if status in (EnergyStatus.BELOW_RESOLUTION, EnergyStatus.INVALID, EnergyStatus.NOT_COVERED):
            reasons.setdefault(f"{status}: {text(energy.get('reason'))}", []).append(text(cand.get("label")))
    parts += [f"{why} ({', '.join(labels)})" for why, labels in reasons.items()]
    return f"{HEADER}: " + "; ".join(parts)


def energy_detail(candidate: Any) -> str:
    """A candidate's energy in a sentence for its detail text."""
    energy = energy_of(candidate)
    if not energy:
        return f"energy: {NOT_RECORDED}"
    status = text(energy.get("status"))
    scope = text(energy.get("scope"))
    if status == EnergyStatus.MEASURED:
        return (f"energy: {joules(energy.get('joules'))} per inference ({scope}, net of idle "
                f"{joules(energy.get('idle_j'))} of {joules(energy.get('gross_j'))} over "
                f"{units.seconds(energy.get('window_s'))}, {units.count(energy.get('calls'))} calls)")
    reason = text(energy.get("reason"))
    return f"energy: {status or 'unavailable'}" + (f": {reason}" if reason else "")
