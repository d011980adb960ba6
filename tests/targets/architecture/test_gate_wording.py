"""An approximation's fidelity verdict in its own words: what it needs (fine-tuning), never a bare failure."""

from __future__ import annotations

from planner.plugins import CandidateSpec, get_plugin


def _spec(kind: str) -> CandidateSpec:
    return CandidateSpec(plugin="architecture.prune", label="prune 50%", config={"architecture": kind})


def test_a_rejected_approximation_says_it_needs_fine_tuning() -> None:
    prune = get_plugin("architecture.prune")
    reason = prune.explain_gate(_spec("approximate"), "rejected", "fidelity check: top-1 agreement 61% < 90%")
    assert reason == "needs fine-tuning: top-1 agreement 61% < 90% (speed measured, accuracy drops)"
    drift = prune.explain_gate(_spec("approximate"), "unconfirmed", "drifts on generated inputs")
    assert drift.endswith("(if it drifts on your data too, it needs fine-tuning)")


def test_a_fine_tuned_candidate_keeps_the_gate_reason() -> None:
    # It was fine-tuned already: "needs fine-tuning" would send the user back to what was done.
    prune = get_plugin("architecture.prune")
    assert prune.explain_gate(_spec("fine-tuned"), "rejected", "accuracy 80% < 97%") == "accuracy 80% < 97%"


def test_a_runtime_plugin_keeps_the_gate_reason() -> None:
    spec = CandidateSpec(plugin="cpu.onnxruntime", precision="fp32")
    assert get_plugin("cpu.onnxruntime").explain_gate(spec, "rejected", "cosine 0.9 < 0.9999") == "cosine 0.9 < 0.9999"
