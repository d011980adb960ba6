"""The trees recommend only what holds here: a step already in force is done, not the plan's first step, and a
step worded for one CPU vendor is taken for that vendor alone, without dropping any plugin from the plan."""

from __future__ import annotations

import pytest
from hardware_profiles import two_core_x86, with_cpu
from plugin_catalog import CATALOG

from planner.advice import defaults_for, evaluate_tree, load_requirements, make_plan

IMAGE, TEXT = (1, 3, 224, 224), (1, 128)


@pytest.fixture
def epyc():
    """An AMD EPYC limited to 2 usable cores (4 physical): torch's 2 intra-op threads are one per usable core."""
    return two_core_x86()


def _visited(path):
    return {v.id: v for v in path.visited}


def _plan(hw, baseline, target="cpu"):
    req = load_requirements(device_class=str(hw.device_class), overrides={"latency_ms": 10})
    return make_plan(target=target, hw=hw, baseline=baseline, requirements=req, catalog=CATALOG)


def test_threads_already_one_per_core_are_done_and_not_the_first_step(epyc, make_baseline) -> None:
    plan = _plan(epyc, make_baseline(intra=2, inter=2))
    visited = _visited(plan.path)
    assert visited["cpu.2"].result == "yes"  # "Do the intra-op threads equal the physical cores?"
    assert visited["cpu.3a"].result == "already done"
    assert not any(s.title.startswith("Set intra-op threads") for s in plan.steps)
    assert plan.steps[0].title == "Channels-last memory format"
    assert "starting with Channels-last memory format" in plan.summary
    # What is still off about threading is said, not dropped.
    assert any("inter-op threads 2: set it to 1" in n for n in plan.notes)


def test_threads_that_do_not_match_are_still_the_first_step(epyc, make_baseline) -> None:
    plan = _plan(epyc, make_baseline(intra=1, inter=1))
    assert _visited(plan.path)["cpu.2.set"].result == "recommended"
    assert plan.steps[0].title.startswith("Set intra-op threads to 2")


def test_an_amd_cpu_is_not_told_the_intel_openvino_claim_but_openvino_is_measured(epyc, make_baseline) -> None:
    plan = _plan(epyc, make_baseline())
    visited = _visited(plan.path)
    assert visited["cpu.3e"].result == "no" and visited["cpu.3e"].evidence.endswith(": made by AMD, not Intel")
    assert "cpu.3e.intel" not in visited
    assert visited["cpu.3e.other"].result == "recommended"
    worded_for_intel = ("If Intel", "(Intel CPUs)")
    assert not any(w in v.text for v in plan.path.visited if v.result == "recommended" for w in worded_for_intel)
    assert not any("If Intel" in s.why or "If Intel" in s.title for s in plan.steps)
    openvino = next(s for s in plan.steps if s.plugins == ("cpu.openvino",))
    assert openvino.why.startswith("Not an Intel CPU: measure OpenVINO anyway")


def test_an_intel_cpu_takes_the_intel_branch(cpu_server, make_baseline) -> None:
    visited = _visited(evaluate_tree("cpu", cpu_server, make_baseline(), defaults_for("cpu_server"), catalog=CATALOG))
    assert visited["cpu.3e"].result == "yes"
    assert visited["cpu.3e.intel"].result == "recommended" and "cpu.3e.other" not in visited


def test_an_undetected_vendor_claims_nothing_for_intel(epyc, make_baseline) -> None:
    unknown = with_cpu(epyc, vendor="")
    visited = _visited(evaluate_tree("cpu", unknown, make_baseline(), defaults_for("cpu_server"), catalog=CATALOG))
    assert visited["cpu.3e"].result == "unknown, taking no" and "cpu.3e.other" in visited


@pytest.mark.parametrize(("vendor_fixture", "mkldnn", "result"), [
    ("epyc", False, "ruled out"), ("epyc", None, "ruled out"), ("epyc", True, "already done"),
    ("cpu_server", False, "recommended"), ("cpu_server", True, "already done"),
])
def test_mkldnn_advice_is_for_intel_cpus_and_done_when_enabled(request, make_baseline, vendor_fixture, mkldnn,
                                                                 result) -> None:
    hw = request.getfixturevalue(vendor_fixture)
    node = _visited(evaluate_tree("cpu", hw, make_baseline(mkldnn=mkldnn), defaults_for("cpu_server"),
                                  catalog=CATALOG))["cpu.3b"]
    assert node.result == result
    if vendor_fixture == "epyc" and result == "ruled out":
        assert node.evidence.startswith("does not apply: this CPU is AMD, not Intel")


@pytest.mark.parametrize("shape", [IMAGE, TEXT], ids=["image", "text"])
@pytest.mark.parametrize("inter", [1, 2])
@pytest.mark.parametrize("vendor_fixture", ["epyc", "cpu_server"])
def test_no_plugin_leaves_the_plan_when_threads_are_done_or_the_cpu_is_not_intel(
        request, make_baseline, shape, inter, vendor_fixture) -> None:
    """PyTorch's CPU settings (compile, bf16, channels-last) and both OpenVINO plugins stay planned on AMD and Intel."""
    hw = request.getfixturevalue(vendor_fixture)
    plan = _plan(hw, make_baseline(intra=2, inter=inter, input_shape=shape))
    assert _visited(plan.path)["cpu.3a"].result == "already done"
    assert {"cpu.torch", "cpu.onnxruntime", "cpu.openvino", "cpu.openvino_int8", "edge.int8"} <= set(plan.plugins)


def test_an_edge_plan_keeps_pytorch_when_its_threads_are_done(hardware_profile, make_baseline) -> None:
    rpi5 = hardware_profile("rpi5")  # 4 cores: torch's 4 intra-op threads already match them
    plan = _plan(rpi5, make_baseline(intra=4, inter=4, p50=400.0, p95=420.0), target="edge")
    assert _visited(plan.path)["edge.3b"].result == "already done"
    assert "cpu.torch" in plan.plugins
