"""A candidate's share of its own precision's roof: INT8 against the INT8 roof, never above 100%."""

from __future__ import annotations

import json

from planner.codec import from_data, to_data
from planner.hardware.ceiling_values import Ceilings
from planner.results import Baseline, CandidateResult, Status
from planner.results.roof_share import RoofShare, candidate_roof_share, flops_per_call, phrase, roof_share
from planner.results.values import LatencyStats, ModelSummary

G = 1e9
CEILINGS = Ceilings(peak_flops={"fp32": 235 * G, "bf16": 1000 * G, "int8": 2000 * G},
                    bandwidth_bytes_per_s=48 * G, source="measured")


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=20, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.0)


def _baseline(flops_per_sample: int | None = 1_800_000_000, batch: int = 4) -> Baseline:
    return Baseline(model=ModelSummary("resnet", "tv:resnet18", "torch", 11_000_000, 44_000_000),
                    input_shape=(batch, 3, 224, 224), latency_ms=_latency(80.0),
                    ceilings=to_data(CEILINGS), flops_per_sample=flops_per_sample, spec={"precision": "fp32"})


def test_an_int8_candidate_is_measured_against_the_int8_roof() -> None:
    # 7.2 GFLOP per call (4 samples of 1.8 GFLOP) in 18 ms attains 400 GFLOP/s: 20% of the 2 TFLOP/s int8 roof,
    # though it would be 170% of the fp32 roof.
    share = candidate_roof_share(_baseline(), "int8", 18.0)
    assert share == RoofShare("int8", 400 * G, 2000 * G, 0.2)
    assert phrase(share) == "20% of the INT8 roof (400 GFLOP/s of 2 TFLOP/s)"


def test_fp32_and_bf16_candidates_get_their_own_roof() -> None:
    assert roof_share("fp32", 72.0, 7.2e9, CEILINGS).share == 100 * G / (235 * G)
    assert phrase(roof_share("BF16", 36.0, 7.2e9, CEILINGS)).startswith("20% of the BF16 roof")


def test_above_the_roof_the_ceiling_is_wrong_not_the_candidate() -> None:
    share = roof_share("int8", 2.0, 7.2e9, CEILINGS)  # 3.6 TOP/s against a 2 TOP/s roof
    assert share is not None and share.share is None
    assert "above the measured int8 roof of 2 TFLOP/s" in share.warning
    assert "planner detect --ceilings --refresh" in share.warning
    assert "%" not in phrase(share)


def test_no_roof_no_share() -> None:
    """fp16 and ternary have no CPU roof; a candidate without a p50 or a model without FLOPs has nothing to share."""
    assert roof_share("fp16", 10.0, 7.2e9, CEILINGS) is None
    assert roof_share("ternary", 10.0, 7.2e9, CEILINGS) is None
    assert roof_share("int8", None, 7.2e9, CEILINGS) is None
    assert candidate_roof_share(_baseline(flops_per_sample=None), "int8", 18.0) is None
    # Pruning or low rank removes multiply-adds: the baseline's count would overstate its work.
    assert candidate_roof_share(_baseline(), "fp32", 40.0, same_work=False) is None
    assert phrase(None) == "" and phrase({}) == ""


def test_the_ceilings_may_come_as_json() -> None:
    as_json = json.loads(json.dumps(to_data(CEILINGS)))
    assert roof_share("int8", 18.0, 7.2e9, as_json) == roof_share("int8", 18.0, 7.2e9, CEILINGS)
    assert flops_per_call(1e9, (8, 3)) == 8e9 and flops_per_call(1e9, ()) == 1e9


def test_the_share_travels_in_results_json_and_older_candidates_still_load() -> None:
    cand = CandidateResult(plugin="int8", label="INT8", config={}, precision="int8", status=Status.OK,
                           roof_share=candidate_roof_share(_baseline(), "int8", 18.0))
    data = json.loads(json.dumps(to_data(cand)))
    assert data["roof_share"]["share"] == 0.2
    assert from_data(data, CandidateResult) == cand
    del data["roof_share"]
    assert from_data(data, CandidateResult).roof_share is None
    # The baseline row states its own (fp32) share: 7.2 GFLOP in 80 ms against 235 GFLOP/s.
    base = _baseline().as_candidate()
    assert base.roof_share is not None and base.roof_share.precision == "fp32"
    assert abs(base.roof_share.share - 90 / 235) < 1e-9
