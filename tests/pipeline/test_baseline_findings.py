"""The baseline's findings: an overhead-bound model is told what removes overhead on the hardware it ran on."""

from __future__ import annotations

from hardware_profiles import fixture_profile, two_core_x86

from planner.hardware.ceilings import Ceilings
from planner.models import load_model
from planner.pipeline.baseline import analyse

# Ceilings so high that demo:tiny's roofline floor is nanoseconds: any real latency is far above it.
HIGH = Ceilings(peak_flops={"fp32": 1e15}, bandwidth_bytes_per_s=1e13, source="measured")


def test_an_overhead_bound_model_gets_a_finding_with_what_to_do_here() -> None:
    model = load_model("demo:tiny")
    # 0.4 ms over demo:tiny's few layer calls is well under 0.1 ms a call: evidence of overhead.
    out = analyse(model, 0.0004, HIGH, quick=True, hw=two_core_x86())
    assert out["bottleneck"]["bound"] == "overhead"
    first = out["findings"][0]
    assert first["id"] == "overhead-bound" and first["category"] == "runtime"
    assert "ONNX Runtime" in first["advice"] and "fewer threads" in first["advice"]
    assert set(first["advice_by_target"]) == {"cpu", "nvidia", "edge"}
    on_a_board = analyse(model, 0.0004, HIGH, quick=True, hw=fixture_profile("rpi4"))
    assert on_a_board["findings"][0]["advice"] == first["advice_by_target"]["edge"]


def test_a_model_that_is_not_overhead_bound_gets_no_overhead_finding() -> None:
    model = load_model("demo:tiny")
    # 0.1 us: a few times demo:tiny's memory floor (274 KiB at 10 TB/s), well short of 10x: not overhead.
    out = analyse(model, 1e-7, HIGH, quick=True)
    assert out["bottleneck"]["bound"] != "overhead"
    assert "overhead-bound" not in {f["id"] for f in out["findings"]}


def test_a_verdict_timed_under_interference_is_marked_unstable_with_the_reason() -> None:
    model = load_model("demo:tiny")
    busy = "taken under interference: other processes used 80% of a core on average"
    out = analyse(model, 0.0004, HIGH, quick=True, interference=busy)
    assert not out["bottleneck"]["stable"] and busy in out["bottleneck"]["unstable_reason"]
    assert busy in out["bottleneck"]["explanation"]
    calm = analyse(model, 0.0004, HIGH, quick=True)
    assert calm["bottleneck"]["stable"] and not calm["bottleneck"]["unstable_reason"]
