"""Compression: fp32, fp16, INT8 and ternary side by side, with sizes measured on disk.

Bits per parameter is the nominal width of the quantized layers' weights (other layers may stay
wider: the per-layer table says which); the size is each candidate's file on disk, measured.
"""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, p50, text
from planner.report.sections.candidates import accuracy_cell, fidelity_cells, fidelity_headers, has_accuracy, label
from planner.results import energy_view

_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "ternary": 2}
_POTENTIAL = "fails fidelity: needs ternary-aware training"


def render(data: ReportData) -> list[str]:
    """The compression table, and the ternary candidate's layer table; [] without a quantized candidate."""
    cands = [c for c in data.candidates
             if text(c.get("status")) in ("ok", "rejected", "unconfirmed") and p50(c) is not None]
    # Shown for edge plans (and whenever a ternary file was made): elsewhere the candidates table says it.
    edge = text(data.results.get("target")) == "edge" or bool(as_dict(data.results.get("edge_device")))
    if not any(text(c.get("precision")) == "ternary" or (edge and text(c.get("precision")) == "int8") for c in cands):
        return []
    reference = next((fmt.real(c.get("size_bytes")) for c in cands
                      if text(c.get("precision")) == "fp32" and fmt.real(c.get("size_bytes"))), None)
    with_accuracy = has_accuracy(cands)
    by_kind = fidelity_headers(cands)[0] != "Cosine"
    rows = []
    for cand in cands:
        precision = text(cand.get("precision"))
        if precision not in _BITS:
            continue
        size = fmt.real(cand.get("size_bytes"))
        ratio = reference / size if reference and size else None
        reason = text(cand.get("reason"))
        if precision == "ternary" and text(cand.get("status")) == "rejected":
            status = f"potential only — {_POTENTIAL}" if _POTENTIAL not in reason else f"potential only — {reason}"
        elif precision == "ternary" and text(cand.get("status")) == "unconfirmed":
            # Drifted on generated inputs only: still a potential, but no failure was shown on real data.
            status = f"potential only — {fmt.plain_reason(reason)}"
        else:
            status = "ranked" if data.rank(cand) is not None else (reason or text(cand.get("status")))
        cosine, _ = fidelity_cells(cand, by_kind=by_kind)
        row = [label(cand), str(_BITS[precision]), fmt.size(size), f"{ratio:.1f}x" if ratio else "—",
               fmt.ms(p50(cand)), energy_view.energy_cell(cand), cosine]
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
    lines += ["", energy_view.energy_note(data.results, [c for c in cands if text(c.get("precision")) in _BITS])]
    lines += _layer_table(cands)
    return lines + [""]


def _layer_table(cands: list[dict]) -> list[str]:
    """Which layers of the ternary file run packed at 2 bits and which stay wider, read back from the file."""
    for cand in cands:
        layers = [as_dict(row) for row in as_list(as_dict(cand.get("info")).get("ternary_layers"))]
        if text(cand.get("precision")) == "ternary" and layers:
            rows = [[text(r.get("layer")), text(r.get("op")), text(r.get("storage"))] for r in layers]
            return ["", f"Layers of the ternary file ({label(cand)}). MatMulNBits layers compute on the packed "
                    "2-bit weights; layers stored packed but \"unpacked at load\" are expanded to fp32 once when "
                    "ONNX Runtime opens the file, so they are small on disk but compute (and sit in memory) at fp32:",
                    "", *fmt.table(["Layer", "Op", "Stored and run as"], rows)]
    return []
