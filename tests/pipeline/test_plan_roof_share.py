"""A plan states each candidate's share of its own precision's roof: set where its speedup is, carried in
results.json, and said in the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import planner.measure.evaluate as evaluate_module
from planner.codec import to_data
from planner.hardware.ceiling_values import Ceilings
from planner.pipeline.candidates import CandidateRun
from planner.plugins import CandidateSpec, Precision
from planner.plugins.declarations import Arithmetic, Declaration
from planner.results import Baseline, CandidateResult, Status
from planner.results.values import LatencyStats, ModelSummary

G = 1e9
CEILINGS = Ceilings(peak_flops={"fp32": 200 * G, "bf16": 800 * G, "int8": 1600 * G}, bandwidth_bytes_per_s=40 * G,
                    source="measured")


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=20, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.0)


class _Declares:
    """A loaded plugin as far as the run reads it: its declaration, and the gate's words left as they are."""

    def __init__(self, arithmetic: Arithmetic) -> None:
        self.arithmetic = arithmetic

    def declaration(self) -> Declaration:
        return Declaration(name="p", target="cpu", arithmetic=self.arithmetic)

    def explain_gate(self, spec, status, reason):
        return reason


def _run(tiny, monkeypatch, arithmetic: Arithmetic) -> CandidateRun:
    """A run whose worker is faked: every candidate answers exactly the reference, in 10 ms."""
    rng = np.random.default_rng(0)
    reference = [rng.standard_normal((2, 10)).astype(np.float32) for _ in range(4)]
    run = object.__new__(CandidateRun)
    run.model, run.quick, run.val_data, run.streams, run.accuracy_budget = tiny, True, None, False, None
    run.workdir = Path("plan") / "artifacts"
    run.reference = reference
    run._plugins = {"p": _Declares(arithmetic)}
    # 1 GFLOP per sample at batch 2: 2 GFLOP per call.
    run.baseline = Baseline(model=ModelSummary("tiny", "demo:tiny", "torch", 1, 1), input_shape=(2, 3, 8, 8),
                            latency_ms=_latency(40.0), ceilings=to_data(CEILINGS), flops_per_sample=1_000_000_000)

    def fake_measure(job, timeout_s):
        result = CandidateResult(plugin=job.spec.plugin, label=job.spec.label, config={},
                                 precision=str(job.spec.precision), status=Status.OK, latency_ms=_latency(10.0))
        return result, [r.copy() for r in reference]

    monkeypatch.setattr(evaluate_module, "measure", fake_measure)
    return run


def test_an_int8_candidate_is_set_against_the_int8_roof(tiny, monkeypatch) -> None:
    run = _run(tiny, monkeypatch, Arithmetic.REDUCED_PRECISION)
    result = run._measure(CandidateSpec(plugin="p", label="INT8", precision=Precision.INT8), None, timeout_s=60)
    assert result.speedup == 4.0
    share = result.roof_share
    # 2 GFLOP in 10 ms: 200 GFLOP/s, all of the fp32 roof but an eighth of the INT8 one.
    assert share is not None and share.precision == "int8" and share.share == pytest.approx(0.125)
    assert json.loads(json.dumps(to_data(result)))["roof_share"]["share"] == pytest.approx(0.125)


def test_a_pruned_candidate_has_no_share(tiny, monkeypatch) -> None:
    """Pruning removes multiply-adds: the baseline's FLOPs would overstate its work."""
    run = _run(tiny, monkeypatch, Arithmetic.APPROXIMATE)
    result = run._measure(CandidateSpec(plugin="p", label="pruned", precision=Precision.FP32), None, timeout_s=60)
    assert result.speedup == 4.0 and result.roof_share is None


@pytest.mark.worker
def test_a_real_plan_states_each_candidates_share_of_its_roof(tiny_plan) -> None:
    out, code, _ = tiny_plan
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    peaks = results["ceilings"]["peak_flops"]
    shared = [c for c in results["candidates"] if c.get("roof_share")]
    assert shared, "no candidate recorded its share of its roof"
    for c in results["candidates"]:
        if c["status"] == "ok" and c["precision"] in peaks and c.get("latency_ms"):
            share = c["roof_share"]
            assert share["precision"] == c["precision"]
            assert share["warning"] or 0 < share["share"] <= 1
    assert "of the FP32 roof" in (out / "report.md").read_text() + (out / "evidence.md").read_text()
