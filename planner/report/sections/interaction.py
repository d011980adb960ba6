"""Interaction: an architecture change and a hardware technique measured alone and together.

A 2x2 table per pair (original or changed architecture, by baseline or chosen runtime), each cell
measured here, then the interaction factor: combined speedup / (architecture speedup x hardware
speedup). Above 1.05 they amplify each other, below 0.95 they conflict, else they are independent.
"""

from __future__ import annotations

from planner import units
from planner.report import figdata, fmt
from planner.report.data import ReportData
from planner.results import energy_view, names
from planner.results.interaction import VERDICT_WORDS, Interaction, InteractionCell

_NEEDS_RETRAINING = "needs retraining: speed measured, accuracy not"


def cells(pair: Interaction) -> dict[str, InteractionCell]:
    """The pair's cells by name (baseline, architecture, hardware, combined)."""
    return {c.cell: c for c in pair.cells}


def _speedup(cell: InteractionCell | None) -> float | None:
    """A cell's speedup over the baseline cell, None where the cell is missing or has none."""
    return cell.speedup if cell is not None else None


def _p50(cell: InteractionCell | None) -> float | None:
    """A cell's median latency in ms, None where the cell is missing or was not timed."""
    return cell.p50_ms if cell is not None else None


def cell_text(cell: InteractionCell | None) -> str:
    """'p50 (speedup)' for a measured cell, else its status and reason."""
    if cell is None:
        return "not measured"
    if cell.p50_ms is None:
        return f"{cell.status or 'failed'}{': ' + cell.reason if cell.reason else ''}"
    busy = " (timed under load)" if cell.disturbed else ""
    # A cell from a file written before energy was measured has no figure; the table's note says so.
    energy = f"; {energy_view.cell_phrase(cell)}" if cell.energy is not None else ""
    return f"{units.ms(cell.p50_ms)} ({units.speedup(cell.speedup)}){busy}{energy}"


def retraining_sentence(pair: Interaction, architecture: str) -> str:
    """Which side of the pair needs retraining, by name ('' when neither does): the redesign alone, never the
    runtime measured beside it."""
    return f"The architecture change, {architecture}, is a redesign that {_NEEDS_RETRAINING}." \
        if pair.needs_retraining else ""


def factor_line(pair: Interaction) -> str:
    """The factor with its arithmetic and verdict, or why it could not be computed."""
    if pair.factor is None:
        return "Interaction factor: not computed (a cell was not measured; its row says why)."
    a, h, c = (_speedup(pair.cell(n)) for n in ("architecture", "hardware", "combined"))
    busy = [name for name, cell in cells(pair).items() if cell.disturbed]
    caution = (f" Cells timed under load ({', '.join(busy)}): other work on the machine can move a cell by "
               "more than the 5% the verdict needs, so re-run on an idle machine before trusting it." if busy else "")
    return (f"Interaction factor = combined / (architecture x hardware) = {units.speedup(c)} / "
            f"({units.speedup(a)} x {units.speedup(h)}) = **{pair.factor:.2f}**: {pair.verdict} — "
            f"{VERDICT_WORDS.get(pair.verdict, '')}.{caution}")


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def retimed(data: ReportData, pair: Interaction) -> list[tuple[str, float | None, str]]:
    """The cells that timed something the plan had already measured, and got another figure: (what, in a reader's
    words, the plan's own p50, how the ranking states it). A quick plan's newer study reuses the plan's figures, so
    none differs."""
    found: list[tuple[str, float | None, str]] = []
    base, plan_base = _p50(pair.cell("baseline")), data.base_ms
    if base is not None and plan_base is not None and not _same(base, plan_base):
        found.append(("the baseline", plan_base, f"p50 {units.ms(plan_base)}"))
    for name, what in (("architecture", pair.architecture), ("hardware", pair.hardware)):
        own = next((c for c in data.run.candidates if c.label == what and not data.is_reference_cand(c)), None)
        mine = _p50(pair.cell(name))
        theirs = own.p50 if own is not None else None
        if own is not None and mine is not None and theirs is not None and not _same(mine, theirs):
            figure = f"p50 {units.ms(theirs)}, {units.speedup(data.speedup_of(own))}"
            found.append((names.title(own), theirs, figure))
    return found


def baseline_retimed(data: ReportData, pair: Interaction) -> bool:
    """Whether the pair's speedups are over a baseline timed again in the interaction step (not the plan's)."""
    return any(what == "the baseline" for what, _, _ in retimed(data, pair))


def _retimed_line(data: ReportData, pair: Interaction) -> list[str]:
    found = retimed(data, pair)
    if not found:
        return []
    figures = "; ".join(f"{what} {figure}" for what, _, figure in found)
    return ["", f"Timed twice: this table timed {fmt.series([what for what, _, _ in found])} again beside the "
            f"other cells, and the factor uses this table's cells so that all four come from the same step. The "
            f"ranking, the Summary and the Roadmap use the plan's own figures: {figures}."]


def render(data: ReportData) -> list[str]:
    """The section; [] when no interaction was measured."""
    pairs = data.run.interactions
    if not pairs:
        return []
    lines = ["## Interaction of architecture and hardware", "",
             "Does an architecture change and a runtime technique add up? Each pair's four cells were measured "
             "here the same way; the interaction factor divides the combined speedup by the product of the two "
             "single speedups (above 1.05: they amplify each other; below 0.95: they conflict; else independent).",
             ""]
    cands = data.run.candidates
    for pair in pairs:
        # The pair names its candidates by label (the key); the reader sees their titles.
        arch, hw = names.title_of(pair.architecture, cands), names.title_of(pair.hardware, cands)
        base_cell = pair.cell("baseline")
        base_label = names.title_of(base_cell.label, cands) if base_cell is not None and base_cell.label else "baseline"
        lines.append(f"### {arch} x {hw}")
        lines.append("")
        if pair.needs_retraining:
            lines += [retraining_sentence(pair, arch), ""]
        lines += fmt.table(["", f"baseline runtime ({base_label})", hw],
                           [["original architecture", cell_text(base_cell), cell_text(pair.cell("hardware"))],
                            [arch, cell_text(pair.cell("architecture")), cell_text(pair.cell("combined"))]])
        lines += ["", energy_view.energy_note(data.run, [])]
        lines += _retimed_line(data, pair)
        lines += ["", factor_line(pair)]
        if pair.method:
            lines += ["", f"Method: {pair.method}."]
        lines.append("")
    return lines + figdata.figure_block(data, figdata.INTERACTION) + [""]
