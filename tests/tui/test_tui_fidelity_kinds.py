"""The TUI's candidate details read a dense map's fidelity by its own test, never top-1 or cosine."""

from __future__ import annotations

import numpy as np
from tui_support import typed_candidate

from planner.codec import to_data
from planner.measure.fidelity import compare
from planner.results import CandidateResult
from planner.tui.screens.results import candidate_detail


def _candidate(fidelity: dict) -> CandidateResult:
    return typed_candidate({"label": "openvino bf16", "plugin": "cpu.openvino", "precision": "bf16", "status": "ok",
                            "fidelity": fidelity})


def test_a_dense_map_shows_its_map_agreement_and_error():
    ref = np.full((2, 1, 8, 8), 0.02)
    ref[:, :, 2:6, 2:6] = 0.9
    text = candidate_detail(_candidate(to_data(compare([ref], [ref + 1e-3]))), 1).plain
    line = next(line for line in text.splitlines() if line.startswith("fidelity:"))
    assert "map IoU 1.00 (thresholded at 0.5)" in line and "mean error 0.001 on the probability scale" in line
    assert "top1" not in line and "cosine" not in line


def test_class_scores_keep_cosine_and_top1():
    ref = np.array([[3.0, 0.0], [0.0, 3.0]])
    text = candidate_detail(_candidate(to_data(compare([ref], [ref]))), 1).plain
    line = next(line for line in text.splitlines() if line.startswith("fidelity:"))
    assert "cosine 1" in line and "top-1 agreement 100%" in line and "largest difference 0" in line
    assert "_" not in line  # plain words, not the results.json field names
