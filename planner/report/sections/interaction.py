"""Interaction: an architecture change and a hardware technique measured alone and together.

A 2x2 table per pair (original or changed architecture, by baseline or chosen runtime), each cell
measured here, then the interaction factor: combined speedup / (architecture speedup x hardware
speedup). Above 1.05 they amplify each other, below 0.95 they conflict, else they are independent.
"""

from __future__ import annotations

from planner import units
from planner.report import figdata, fmt
from planner.report.data import ReportData, as_dict, as_list, text
from planner.results import energy_view
from planner.results.interaction import VERDICT_WORDS

_NEEDS_RETRAINING = "needs retraining: speed measured, accuracy not"


def cells(pair: dict) -> dict[str, dict]:
    """The pair's cells by name (baseline, architecture, hardware, combined)."""
    return {text(c.get("cell")): c for c in as_list(pair.get("cells")) if isinstance(c, dict)}


def cell_text(cell: dict | None) -> str:
    """'p50 (speedup)' for a measured cell, else its status and reason."""
    if not cell:
        return "not measured"
    p50 = fmt.real(cell.get("p50_ms"))
    if p50 is None:
        reason = text(cell.get("reason"))
        return f"{text(cell.get('status')) or 'failed'}{': ' + reason if reason else ''}"
    busy = " (timed under load)" if cell.get("disturbed") else ""
    # A cell from a file written before energy was measured has no figure; the table's note says so.
    energy = f"; {energy_view.cell_phrase(cell)}" if energy_view.energy_of(cell) else ""
    return f"{units.ms(p50)} ({units.speedup(cell.get('speedup'))}){busy}{energy}"


def factor_line(pair: dict) -> str:
    """The factor with its arithmetic and verdict, or why it could not be computed."""
    by = cells(pair)
    factor = fmt.real(pair.get("factor"))
    if factor is None:
        return "Interaction factor: not computed (a cell was not measured; its row says why)."
    a, h, c = (fmt.real(by.get(n, {}).get("speedup")) for n in ("architecture", "hardware", "combined"))
    verdict = text(pair.get("verdict"))
    busy = [n for n, c in by.items() if c.get("disturbed")]
    caution = (f" Cells timed under load ({', '.join(busy)}): other work on the machine can move a cell by "
               "more than the 5% the verdict needs, so re-run on an idle machine before trusting it." if busy else "")
    return (f"Interaction factor = combined / (architecture x hardware) = {units.speedup(c)} / "
            f"({units.speedup(a)} x {units.speedup(h)}) = **{factor:.2f}**: {verdict} — "
            f"{VERDICT_WORDS.get(verdict, '')}.{caution}")


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def retimed(data: ReportData, pair: dict) -> list[tuple[str, float | None, str]]:
    """The cells that timed something the plan had already measured, and got another figure: (what, the plan's
    own p50, how the ranking states it). A quick plan's newer study reuses the plan's figures, so none differs."""
    by = cells(pair)
    found: list[tuple[str, float | None, str]] = []
    base = by.get("baseline", {})
    if fmt.real(base.get("p50_ms")) is not None and data.base_p50 is not None \
            and not _same(fmt.real(base.get("p50_ms")), data.base_p50):
        found.append(("the baseline", data.base_p50, f"p50 {units.ms(data.base_p50)}"))
    for name in ("architecture", "hardware"):
        cell = by.get(name, {})
        own = next((c for c in data.candidates if text(c.get("label")) == text(pair.get(name))
                    and not data.is_reference(c)), None)
        mine = fmt.real(cell.get("p50_ms"))
        theirs = fmt.real(as_dict(own.get("latency_ms")).get("p50_ms")) if own is not None else None
        if own is not None and mine is not None and theirs is not None and not _same(mine, theirs):
            found.append((text(pair.get(name)), theirs,
                          f"p50 {units.ms(theirs)}, {units.speedup(data.speedup(own))}"))
    return found


def baseline_retimed(data: ReportData, pair: dict) -> bool:
    """Whether the pair's speedups are over a baseline timed again in the interaction step (not the plan's)."""
    return any(what == "the baseline" for what, _, _ in retimed(data, pair))


def _retimed_line(data: ReportData, pair: dict) -> list[str]:
    found = retimed(data, pair)
    if not found:
        return []
    figures = "; ".join(f"{what} {figure}" for what, _, figure in found)
    return ["", f"Timed twice: this table timed {fmt.series([what for what, _, _ in found])} again beside the "
            f"other cells, and the factor uses this table's cells so that all four come from the same step. The "
            f"ranking, the Summary and the Roadmap use the plan's own figures: {figures}."]


def render(data: ReportData) -> list[str]:
    """The section; [] when no interaction was measured."""
    pairs = [as_dict(p) for p in as_list(data.results.get("interactions")) if as_dict(p)]
    if not pairs:
        return []
    lines = ["## Interaction of architecture and hardware", "",
             "Does an architecture change and a runtime technique add up? Each pair's four cells were measured "
             "here the same way; the interaction factor divides the combined speedup by the product of the two "
             "single speedups (above 1.05: they amplify each other; below 0.95: they conflict; else independent).",
             ""]
    for pair in pairs:
        by = cells(pair)
        arch, hw = text(pair.get("architecture")), text(pair.get("hardware"))
        base_label = text(by.get("baseline", {}).get("label")) or "baseline"
        lines.append(f"### {arch} x {hw}")
        lines.append("")
        if pair.get("needs_retraining"):
            lines += [f"The architecture change is a redesign that {_NEEDS_RETRAINING}.", ""]
        lines += fmt.table(["", f"baseline runtime ({base_label})", hw],
                           [["original architecture", cell_text(by.get("baseline")), cell_text(by.get("hardware"))],
                            [arch, cell_text(by.get("architecture")), cell_text(by.get("combined"))]])
        lines += ["", energy_view.energy_note(data.results, [])]
        lines += _retimed_line(data, pair)
        lines += ["", factor_line(pair)]
        method = text(pair.get("method"))
        if method:
            lines += ["", f"Method: {method}."]
        lines.append("")
    return lines + figdata.figure_block(data, figdata.INTERACTION) + [""]
