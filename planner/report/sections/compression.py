"""Compression: fp32, fp16, INT8 and ternary side by side, with sizes measured on disk.

Bits per parameter is the nominal width of the quantized layers' weights (other layers may stay
wider: the per-layer table says which); the size is each candidate's file on disk, measured.
"""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import accuracy_cell, fidelity_cells, fidelity_headers, has_accuracy
from planner.results import CandidateResult, Status, energy_view, names

_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "ternary": 2}
_POTENTIAL = "fails fidelity: needs ternary-aware training"


def render(data: ReportData) -> list[str]:
    """The compression table, and the ternary candidate's layer table; [] without a quantized candidate."""
    cands = [c for c in data.run.candidates if c.measured]
    # Shown for edge plans (and whenever a ternary file was made): elsewhere the candidates table says it.
    edge = data.run.target == "edge" or data.run.edge_device is not None
    if not any(c.precision == "ternary" or (edge and c.precision == "int8") for c in cands):
        return []
    reference = next((c.size_bytes for c in cands if c.precision == "fp32" and c.size_bytes), None)
    with_accuracy = has_accuracy(cands)
    by_kind = fidelity_headers(cands)[0] != "Cosine"
    rows = []
    for cand in cands:
        if cand.precision not in _BITS:
            continue
        size = cand.size_bytes
        ratio = reference / size if reference and size else None
        reason = cand.reason
        if cand.precision == "ternary" and cand.status == Status.REJECTED:
            status = f"potential only — {_POTENTIAL}" if _POTENTIAL not in reason else f"potential only — {reason}"
        elif cand.precision == "ternary" and cand.status == Status.UNCONFIRMED:
            # Drifted on generated inputs only: still a potential, but no failure was shown on real data.
            status = f"potential only — {fmt.plain_reason(reason)}"
        else:
            status = "ranked" if data.rank_of(cand) is not None else (reason or str(cand.status))
        cosine, _ = fidelity_cells(cand, by_kind=by_kind)
        row = [names.title(cand), str(_BITS[cand.precision]), fmt.size(size), f"{ratio:.1f}x" if ratio else "—",
               fmt.ms(cand.p50), energy_view.energy_cell(cand), cosine]
        if with_accuracy:
            row.append(accuracy_cell(cand))
        rows.append(row + [status])
    headers = ["Candidate", "Bits/param", "Size on disk", "vs fp32", "p50", energy_view.HEADER,
               fidelity_headers(cands)[0]]
    if with_accuracy:
        headers.append("Accuracy")
    lines = ["## Compression", "",
             "Each precision's file as written and measured here. Bits/param is the nominal weight width of "
             "the quantized layers; the size is the file on disk (measured), so layers left wider show in it. "
             "A ternary candidate that fails the fidelity check shows what ternary-aware training could make "
             "deployable; it is never ranked.", ""]
    lines += fmt.table(headers + ["Status"], rows)
    lines += ["", energy_view.energy_note(data.run, [c for c in cands if c.precision in _BITS])]
    lines += _layer_table(cands)
    return lines + [""]


def _layer_table(cands: list[CandidateResult]) -> list[str]:
    """Which layers of the ternary file run packed at 2 bits and which stay wider, read back from the file."""
    for cand in cands:
        # Plain JSON in info: the packed file's rows (describe_packed); a ternary estimate's info counts its
        # layers there instead (an int), which has no rows to show.
        found = cand.info.get("ternary_layers")
        layers = [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []
        if cand.precision == "ternary" and layers:
            rows = [["" if r.get(key) is None else str(r[key]) for key in ("layer", "op", "storage")] for r in layers]
            return ["", f"Layers of the ternary file ({names.title(cand)}). MatMulNBits layers compute on the packed "
                    "2-bit weights; layers stored packed but \"unpacked at load\" are expanded to fp32 once when "
                    "ONNX Runtime opens the file, so they are small on disk but compute (and sit in memory) at fp32:",
                    "", *fmt.table(["Layer", "Op", "Stored and run as"], rows)]
    return []
