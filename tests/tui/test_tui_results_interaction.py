"""Results step details: a candidate that is part of an interaction pair shows the four cells and the factor."""

from __future__ import annotations

from tui_support import typed_candidate

from planner.results.interaction import Interaction, InteractionCell
from planner.tui.screens.results import candidate_detail

_PAIR = Interaction(
    architecture="redesign stem stride 4", hardware="openvino bf16 latency 2t",
    cells=(InteractionCell("baseline", "torch eager fp32 (cpu)", 200.0, 1.0),
           InteractionCell("architecture", "redesign stem stride 4", 50.0, 4.0),
           InteractionCell("hardware", "openvino bf16 latency 2t", 100.0, 2.0),
           InteractionCell("combined", "both", 40.0, 5.0, disturbed=True)),
    factor=0.625, verdict="conflict", needs_retraining=True)


def test_the_hardware_side_shows_the_pair_with_its_verdict() -> None:
    cand = {"label": "openvino bf16 latency 2t", "plugin": "cpu.openvino", "precision": "bf16", "status": "ok"}
    text = candidate_detail(typed_candidate(cand), 2, [_PAIR]).plain
    assert "interaction with redesign stem stride 4:" in text
    assert "combined     40 ms (5x) (timed under load)" in text
    assert "= 0.62: conflict" in text or "= 0.63: conflict" in text
    # Issue 38: the retraining is the redesign's, said by name, never the runtime's whose details these are.
    assert ("The architecture change, redesign stem stride 4, is a redesign that needs retraining: speed measured, "
            "accuracy not.") in text
    assert "\n  needs retraining" not in text


def test_a_candidate_outside_every_pair_shows_no_interaction() -> None:
    cand = {"label": "torch cpu fp32 2t", "plugin": "cpu.torch", "precision": "fp32", "status": "ok"}
    assert "interaction" not in candidate_detail(typed_candidate(cand), 1, [_PAIR]).plain
