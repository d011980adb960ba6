"""Each measured candidate projected onto an edge board: a labelled roofline estimate beside the measurement.

The FLOPs per sample are the baseline's measured count, the weight bytes each candidate's file
size on disk, the activation bytes the baseline's measured peak; the board's ceilings are
datasheet figures (planner/hardware/boards.py). Nothing here is a measurement on the board.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.results import EdgeCandidate, EdgeProjection, PlanResults

if TYPE_CHECKING:
    from planner.hardware.boards import EdgeProfile

_INT8_LIKE = ("int8", "ternary")


def resolve_device(device: str | None, device_class: str, board: str | None) -> "EdgeProfile | None":
    """The edge profile for --device (a clear error for an unknown name), else the detected board's, else None."""
    from planner.hardware.boards import get_profile, profile_for_board

    if device:
        return get_profile(device)
    return profile_for_board(device_class, board)


def edge_projection(results: PlanResults, profile: "EdgeProfile", *, detected: bool = False) -> EdgeProjection:
    """The board's profile and, per measured candidate, its roofline estimate there (all labelled)."""
    from planner.hardware.boards import project

    base = results.baseline
    flops = base.flops_per_sample if base else None
    activations = float(base.peak_activation_bytes or 0) if base else 0.0
    rows = []
    for cand in results.candidates:
        if not cand.measured:
            continue
        changed = bool((cand.config or {}).get("architecture"))  # pruned, redesigned: not the original weights
        size = cand.size_bytes if cand.size_bytes is not None else (
            base.model.size_bytes if base and not changed else None)
        estimate = project(profile, flops=flops, weight_bytes=size, activation_bytes=activations,
                           int8=str(cand.precision) in _INT8_LIKE)
        rows.append(EdgeCandidate(label=cand.label, precision=str(cand.precision), measured_p50_ms=cand.p50,
                                  size_bytes=size, **estimate))
    return EdgeProjection(profile=profile, chosen_by="detected board" if detected else "--device",
                          candidates=tuple(rows))
