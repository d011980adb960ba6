"""The interaction step picks the pairs to measure: the best gated architecture change, any measured
redesign, each with the best-ranked hardware candidate."""

from __future__ import annotations

import dataclasses

from planner.pipeline.interaction import pairs
from planner.results import CandidateResult, Declared, Status
from planner.results.values import Fidelity

# What each architecture kind's plugin declares (recorded with its candidates when measured).
_DECLARED = {"exact": Declared(phase=3, transforms_model=True),
             "approximate": Declared(phase=2, arithmetic="approximate", transforms_model=True),
             "redesign": Declared(phase=3, arithmetic="structural", transforms_model=True)}

_BASELINE = CandidateResult(plugin="torch.eager", label="torch eager fp32 (cpu)", config={}, precision="fp32",
                            status=Status.OK, speedup=1.0, spec={"plugin": "torch.eager"},
                            fidelity=Fidelity(1.0, 0.0, 0.0, 1.0, 8, reference=True))


def _cand(plugin: str, label: str, status: Status, speedup: float, kind: str = "") -> CandidateResult:
    config = {"architecture": kind, "transform": {"plugin": plugin}} if kind else {}
    return CandidateResult(plugin=plugin, label=label, config=config, precision="fp32", status=status,
                           speedup=speedup, spec={"plugin": plugin, "label": label, "config": config},
                           declared=_DECLARED.get(kind, Declared()))


def test_pairs_take_the_fastest_gated_transform_and_the_redesign_with_the_best_hardware() -> None:
    cands = [
        _BASELINE,
        _cand("cpu.openvino", "openvino", Status.OK, 2.0),
        _cand("cpu.torch", "torch cpu", Status.OK, 1.5),
        _cand("architecture.align", "align", Status.OK, 1.1, "exact"),
        _cand("architecture.prune", "prune (needs fine-tuning)", Status.REJECTED, 1.6, "approximate"),
        _cand("architecture.redesign", "redesign", Status.REJECTED, 3.0, "redesign"),
    ]
    order = [1, 2, 0]  # ranking: openvino first
    found = [(a.label, h.label) for a, h in pairs(cands, order)]
    assert found == [("align", "openvino"), ("redesign", "openvino")]


def test_no_hardware_candidate_no_pairs() -> None:
    cands = [_BASELINE,
             _cand("architecture.align", "align", Status.OK, 1.1, "exact")]
    assert pairs(cands, [0, 1]) == []


def test_a_change_made_for_int8_is_also_paired_with_the_best_int8_candidate() -> None:
    padded = _cand("architecture.align", "align to 16 for INT8", Status.OK, 0.9, "exact")
    padded = dataclasses.replace(padded, config={**padded.config, "transform": {
        "plugin": "architecture.align", "multiple": 16, "pairs_with": "int8"}})
    int8 = dataclasses.replace(_cand("cpu.onnxruntime_int8", "ort int8", Status.OK, 1.8), precision="int8")
    cands = [_BASELINE, _cand("cpu.openvino", "openvino", Status.OK, 2.0),
             _cand("architecture.fold", "fold", Status.OK, 1.2, "exact"), padded, int8]
    found = [(a.label, h.label) for a, h in pairs(cands, [1, 4, 0])]
    assert found == [("fold", "openvino"), ("align to 16 for INT8", "ort int8")]
