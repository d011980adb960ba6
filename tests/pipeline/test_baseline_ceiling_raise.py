"""The baseline's analysis: a run that beats the cached peak raises it instead of printing >100%."""

from __future__ import annotations

from planner.hardware.ceilings import Ceilings
from planner.models import load_model
from planner.pipeline.baseline import analyse


def test_beating_the_peak_raises_the_ceiling_and_warns() -> None:
    model = load_model("demo:tiny")
    # A ceiling no real run can stay under: 1 MFLOP/s, as if measured on a machine busy to a standstill.
    low = Ceilings(peak_flops={"fp32": 1e6}, bandwidth_bytes_per_s=1e12, source="measured")
    out = analyse(model, 0.01, low, quick=True)
    raised = out["ceilings"]
    assert raised["peak_flops"]["fp32"] > 1e6
    assert raised["details"]["fp32_raised"]["from"] == 1e6
    assert "attained by" in " ".join(out["analysis_notes"])
    bottleneck = out["bottleneck"]
    assert "planner detect --ceilings --refresh" in bottleneck["ceiling_warning"]
    assert bottleneck["efficiency"] is None or bottleneck["efficiency"] <= 1.0
    for verdict in out["layer_verdicts"].values():
        assert verdict["efficiency"] is None or verdict["efficiency"] <= 1.0
        if verdict["measured_time_s"]:
            assert verdict["compute_time_s"] <= verdict["measured_time_s"]


def test_an_honest_ceiling_is_left_alone() -> None:
    model = load_model("demo:tiny")
    high = Ceilings(peak_flops={"fp32": 1e15}, bandwidth_bytes_per_s=1e13, source="measured")
    out = analyse(model, 0.01, high, quick=True)
    assert "ceilings" not in out
    assert out["bottleneck"]["ceiling_warning"] == ""
