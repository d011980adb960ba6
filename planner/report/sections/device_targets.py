"""Device targets: which measured candidates meet which tier's budgets, and an edge board projection.

The tier budgets are the device performance targets (rules of thumb, the same ones the default
requirements use), not measurements; each candidate is judged on what was measured here: p50
latency, peak memory and the file's size on disk. The edge
projection (when a board was named with --device, or detected) is an estimate with its basis.
"""

from __future__ import annotations

from planner.advice.requirements import TIER_TARGETS
from planner.report import fmt
from planner.report.data import ReportData
from planner.results import CandidateResult, EdgeProjection, Status, energy_view, names

ON_BOARD = "not measured on the board"
"""A projected board's energy: nothing ran there, and energy is never estimated from a datasheet."""

# (tier, latency ms, memory MB, model size MB): the device performance targets the requirements use too,
# so a tier here never disagrees with the default requirements of that device class.
TIERS: tuple[tuple[str, float, float, float], ...] = tuple(
    (str(tier).lower(), t.latency_ms, t.memory_bytes / 2**20, t.model_size_bytes / 2**20)
    for tier, t in TIER_TARGETS.items())


def _size(data: ReportData, cand: CandidateResult) -> int | None:
    """The candidate's file on disk; the original model's weights for a candidate that runs them as loaded;
    None for a changed model (pruned, factorised, redesigned) written to no file."""
    if cand.size_bytes is not None:
        return cand.size_bytes
    if cand.config.get("architecture"):
        return None  # its weights are not the original's, and no file of them was measured
    return data.model_record.size_bytes if data.model_record is not None else None


def _meets(cand: CandidateResult, latency_ms: float, memory_mb: float, size_mb: float,
           size: float | None = None) -> bool | None:
    """Whether every measured figure is within the budgets; None when latency was not measured.

    Memory is the candidate's own worker's peak (an ONNX Runtime worker holds no PyTorch); size is
    `size`, else the candidate's file on disk.
    """
    lat = cand.p50
    if lat is None:
        return None
    memory = cand.peak_memory_bytes
    size = size if size is not None else cand.size_bytes
    return (lat <= latency_ms and (memory is None or memory / 2**20 <= memory_mb)
            and (size is None or size / 2**20 <= size_mb))


def render(data: ReportData) -> list[str]:
    """The tier table and, when present, the edge board projection; [] when nothing was measured."""
    cands = [c for c in data.run.candidates if c.measured]
    edge = data.run.edge_device
    if not cands or (data.run.target != "edge" and edge is None):
        return []  # a plan for a server or desktop GPU has its own requirements section
    lines = ["## Device targets", "",
             "Budgets per deployment tier are the device performance targets, rules of thumb (latency, memory, "
             "model size), not "
             "measurements; each candidate is judged on its measured p50, its own measuring process's peak memory "
             "(an ONNX Runtime candidate's process holds no PyTorch) and its file's size on disk (the original "
             "weights for one that runs them as loaded). A tier is met only when every measured figure is within "
             "its budget.", ""]
    budget_rows = [[tier, fmt.ms(lat), fmt.size(mem * 2**20), fmt.size(size * 2**20)]
                   for tier, lat, mem, size in TIERS]
    lines += fmt.table(["Tier", "Latency budget", "Memory budget", "Model size budget"], budget_rows)
    rows = []
    for cand in cands:
        size_on_disk = _size(data, cand)
        met = [tier for tier, lat, mem, size in TIERS if _meets(cand, lat, mem, size, size_on_disk)]
        note = {Status.REJECTED: " (not deployable: failed the fidelity check)",
                Status.UNCONFIRMED: " (check on your data first: not established on real data)"}.get(cand.status, "")
        if size_on_disk is None and met:
            note += " (model size not measured: judged on latency and memory only)"
        rows.append([names.title(cand), fmt.ms(cand.p50), energy_view.energy_cell(cand),
                     fmt.size(cand.peak_memory_bytes), fmt.size(size_on_disk),
                     (", ".join(met) or "none") + note])
    lines += ["", *fmt.table(["Candidate", "p50", energy_view.HEADER, "Peak memory", "Size on disk", "Tiers met"],
                             rows)]
    lines += ["", energy_view.energy_note(data.run, cands)]
    lines += _projection(edge, data)
    return lines + [""]


def _projection(edge: EdgeProjection | None, data: ReportData) -> list[str]:
    """The edge board's traits and each candidate's roofline estimate there, labelled as estimates; its energy is
    this machine's where measured, never the board's (nothing ran there)."""
    if edge is None or not edge.candidates:
        return []
    profile, rows = edge.profile, edge.candidates
    traits = [name for name, has in (("NEON", profile.neon), ("INT8 dot product", profile.dot_product),
                                     ("INT8 matrix multiply (i8mm)", profile.i8mm), ("fp16 arithmetic", profile.fp16))
              if has is True]
    lines = ["", f"### Projection onto {profile.title} (estimate)", "",
             f"{profile.cpu}, {profile.cores} cores at {profile.clock_ghz} GHz, "
             f"{fmt.number(profile.memory_gb)} GB; instructions: {', '.join(traits) or 'none of note'}. "
             f"Ceilings are datasheet-derived, not measured ({profile.ceiling_basis}). "
             f"Board budgets (the planner's defaults): {fmt.ms(profile.latency_budget_ms)} latency, "
             f"{fmt.size(profile.model_size_budget_mb * 2**20)} model size. "
             f"Chosen by: {edge.chosen_by or '--device'}.", ""]
    cands = data.run.candidates
    # A projected row names its candidate by label, the key; the reader sees the candidate's title.
    energy_here = {c.label: energy_view.energy_cell(c) for c in cands}
    table = [[names.title_of(r.label, cands), fmt.ms(r.measured_p50_ms),
              energy_here.get(r.label, energy_view.NOT_RECORDED), ON_BOARD, fmt.ms(r.estimate_ms), r.bound or "—",
              _yes_no(r.fits_latency_budget), _yes_no(r.fits_size_budget)]
             for r in rows]
    lines += fmt.table(["Candidate", "Measured here (p50)", f"{energy_view.HEADER} here",
                        f"{energy_view.HEADER} on board", "Estimated on board (roofline lower bound)", "Bound",
                        "Within latency budget", "Within size budget"], table)
    basis = rows[0].basis
    if basis:
        lines += ["", f"Basis: {basis}."]
    return lines


def _yes_no(value: bool | None) -> str:
    """A fit in a word: 'yes', 'no', or '—' when it was not judged."""
    return "—" if value is None else "yes" if value else "no"
