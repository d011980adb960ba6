"""Energy per inference in words, read from the typed records.

The report, the TUI and the CLI show each candidate's joules per inference beside its p50 through
`energy_cell`, never blank: a figure, or 'unavailable', 'below resolution', 'invalid', 'not covered'
(the counter does not see the candidate's device), or 'not recorded' (a file written before energy
was measured). `energy_note` is the one footnote that says where the figures come from, or why
there are none and what would make a counter readable. Nothing here estimates from a TDP.
"""

from __future__ import annotations

from typing import Iterable, Union

from planner import units
from planner.results.energy_values import EnergySource, EnergyStatus, InferenceEnergy
from planner.results.interaction import InteractionCell
from planner.results.values import Baseline, CandidateResult, PlanResults

NOT_RECORDED = "not recorded"
"""A candidate from a file written before energy was measured."""
NOT_MEASURED = "not measured"
"""A candidate that was never timed (skipped, failed): no window to meter."""
HEADER = "J/inference"

Metered = Union[CandidateResult, Baseline, InteractionCell]
"""What carries an energy figure: a candidate, the baseline, one cell of an interaction pair."""


def joules(value: float | None, *, missing: str = units.MISSING) -> str:
    """An energy: '1.2 J', '38.2 mJ', '412 µJ' (nJ below a microjoule)."""
    return units.joules(value, missing=missing)


def _timed(metered: Metered | None) -> bool:
    """Whether its latency was measured (one that was not has no energy figure either); an interaction cell
    carries its median alone, so it counts as not timed here, as it always read."""
    return isinstance(metered, (CandidateResult, Baseline)) and metered.latency_ms is not None


def energy_of(metered: Metered | None) -> InferenceEnergy | None:
    """Its energy record (None when it has none)."""
    return metered.energy if metered is not None else None


def energy_cell(metered: Metered | None) -> str:
    """The J/inference cell: '38.2 mJ', or the status in a word or two (never blank)."""
    energy = energy_of(metered)
    if energy is None:
        return NOT_RECORDED if _timed(metered) else NOT_MEASURED
    if energy.status == EnergyStatus.MEASURED:
        return joules(energy.joules, missing="invalid")
    return str(energy.status)


SHORT = {EnergyStatus.BELOW_RESOLUTION: "<res", EnergyStatus.INVALID: "inval", EnergyStatus.UNAVAILABLE: "n/a",
         EnergyStatus.NOT_COVERED: "n/cov"}
"""Marks for a narrow column (the TUI's, the CLI's): the details or the closing lines say why."""
SHORT_HEADER = "mJ/inf"


def short_cell(metered: Metered | None) -> str:
    """A narrow column's cell: millijoules per inference as a bare number, or a mark ('n/a', '<res', ...)."""
    energy = energy_of(metered)
    if energy is None:
        return "n/rec" if _timed(metered) else units.MISSING
    if energy.status == EnergyStatus.MEASURED:
        return units.sig((energy.joules or 0.0) * 1e3)
    return SHORT.get(energy.status, str(energy.status)[:5])


def cell_phrase(metered: Metered | None) -> str:
    """The cell in running text: '38.2 mJ/inference', or 'J/inference unavailable' (never blank)."""
    cell = energy_cell(metered)
    energy = energy_of(metered)
    return f"{cell}/inference" if energy is not None and energy.status == EnergyStatus.MEASURED \
        else f"{HEADER} {cell}"


def energy_value(metered: Metered | None) -> float | None:
    """Joules per inference when measured, else None (for sorting and plots)."""
    energy = energy_of(metered)
    return energy.joules if energy is not None and energy.status == EnergyStatus.MEASURED else None


def energy_line(source: EnergySource | None) -> str:
    """The energy counter in one line: what it measures and the idle power, or 'unavailable: why' and the fix."""
    return f"energy per inference: {source_words(source)}"


def source_words(source: EnergySource | None) -> str:
    """energy_line without its lead: '<scope> energy from <source> (...), net of idle ...' or 'unavailable: ...'."""
    if source is None:
        return f"{NOT_RECORDED} (this plan was made before energy was measured)"
    if not source.available:
        return (f"unavailable: {source.reason or 'no energy counter'}"
                + (f". To make it readable: {source.fix}" if source.fix else "") + ". Never estimated from a TDP.")
    return (f"{source.scope} energy from {source.source}"
            + (f" ({source.detail})" if source.detail else "")
            + f", net of idle {units.sig(source.idle_w)} W (measured over "
            f"{units.seconds(source.idle_window_s)} before the baseline, halves "
            f"{units.sig(source.idle_spread_w)} W apart)")


def energy_note(results: PlanResults, candidates: Iterable[CandidateResult] | None = None) -> str:
    """The table's one footnote on J/inference: where the figures come from (or why there are none), and why any
    candidate has no figure. `candidates` defaults to the plan's."""
    source = results.energy_source
    parts = [source_words(source)]
    if source is not None and source.available:
        parts.append("per call at the model's batch, over each candidate's latency timing (warm-up included)")
    reasons: dict[str, list[str]] = {}
    for cand in candidates if candidates is not None else results.candidates:
        energy = cand.energy
        if energy is not None and energy.status in (EnergyStatus.BELOW_RESOLUTION, EnergyStatus.INVALID,
                                                    EnergyStatus.NOT_COVERED):
            reasons.setdefault(f"{energy.status}: {energy.reason}", []).append(cand.label)
    parts += [f"{why} ({', '.join(labels)})" for why, labels in reasons.items()]
    return f"{HEADER}: " + "; ".join(parts)


def energy_detail(metered: Metered | None) -> str:
    """Its energy in a sentence for its detail text."""
    energy = energy_of(metered)
    if energy is None:
        return f"energy: {NOT_RECORDED}"
    if energy.status == EnergyStatus.MEASURED:
        return (f"energy: {joules(energy.joules)} per inference ({energy.scope}, net of idle "
                f"{joules(energy.idle_j)} of {joules(energy.gross_j)} over "
                f"{units.seconds(energy.window_s)}, {units.count(energy.calls)} calls)")
    return f"energy: {energy.status}" + (f": {energy.reason}" if energy.reason else "")
