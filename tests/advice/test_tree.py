"""Decision trees: valid as data, renderable, and walked with the evidence that decided each branch."""

from __future__ import annotations

import json

import pytest
from plugin_catalog import CATALOG

from planner.advice import defaults_for, evaluate_tree, load_requirements, tree_nodes
from planner.advice.tree import ACTIONS, TREES, validate_tree
from planner.codec import to_data
from planner.plugins import ActionId


def _visited(path):
    return {v.id: v for v in path.visited}


@pytest.mark.parametrize("target", ["nvidia", "cpu", "edge"])
def test_trees_are_well_formed_and_plan_only_their_own_hardware(target: str) -> None:
    assert validate_tree(TREES[target]) == []


def test_a_gpu_plugin_that_declares_a_cpu_action_is_never_planned_for_a_cpu(cpu_server, make_baseline) -> None:
    from planner.plugins import Catalog, Declaration

    gpu = Declaration(name="gpu.engine", target="nvidia", actions=(ActionId.GRAPH_RUNTIME,))
    anywhere = Declaration(name="any.runtime", target="any", actions=(ActionId.GRAPH_RUNTIME,))
    catalog = Catalog((*CATALOG.declarations, gpu, anywhere))
    path = evaluate_tree("cpu", cpu_server, make_baseline(), defaults_for("cpu_server"), catalog=catalog)
    step = next(a for a in path.actions if a.action.id == ActionId.GRAPH_RUNTIME)
    assert step.plugins == ("any.runtime", "cpu.onnxruntime")


def test_an_action_no_plugin_declares_is_advice() -> None:
    from planner.plugins import Catalog

    view = tree_nodes("cpu", catalog=Catalog())
    assert all(not node.plugins for node in _walk(view))


def test_tree_nodes_render_every_branch() -> None:
    root = tree_nodes("cpu", catalog=CATALOG)
    assert [c.id for c in root.children] == ["cpu.1", "cpu.2", "cpu.3", "cpu.4", "cpu.5"]
    threads = root.children[1]
    assert threads.text == "2. Do the intra-op threads equal the physical cores?"
    assert [(c.id, c.branch) for c in threads.children] == [("cpu.2.ok", "yes"), ("cpu.2.set", "no")]
    apply = root.children[2]
    assert [c.plugins for c in apply.children] == [("cpu.torch",), (), ("cpu.torch",), ("cpu.onnxruntime",), (),
                                                   ("cpu.torch",)]
    vendor = apply.children[4]  # OpenVINO hangs on the vendor question: claimed best on Intel, measured elsewhere
    assert [(c.id, c.branch, c.plugins) for c in vendor.children] == [
        ("cpu.3e.intel", "yes", ("cpu.openvino",)), ("cpu.3e.other", "no", ("cpu.openvino",))]
    json.dumps(to_data(tree_nodes("nvidia", catalog=CATALOG)))
    with pytest.raises(ValueError, match="edge"):
        tree_nodes("fpga", catalog=CATALOG)


def test_edge_slow_model_takes_the_too_large_branch(pi4, make_baseline) -> None:
    path = evaluate_tree("edge", pi4, make_baseline(p50=412.0, p95=430.0, intra=4), defaults_for("raspberry_pi"),
                         catalog=CATALOG)
    node = _visited(path)["edge.2"]
    assert node.result == "yes" and node.evidence == "p50 412 ms > 100 ms per sample"
    assert path.actions[0].action.id == ActionId.SMALLER_ARCHITECTURE
    assert "on this raspberry_pi" in _visited(path)["edge.1"].evidence


def test_edge_fast_model_optimizes_the_current_one(pi4, make_baseline) -> None:
    path = evaluate_tree("edge", pi4, make_baseline(p50=60.0, p95=65.0, intra=4), defaults_for("raspberry_pi"),
                         catalog=CATALOG)
    assert _visited(path)["edge.2"].result == "no"
    assert path.actions[0].plugins == ("edge.int8",)


def test_gpu_low_utilization_is_decided_by_the_measured_percentage(a100_server, make_baseline) -> None:
    base = make_baseline(device="cuda", target="nvidia", gpu_utilization=23, p50=2.4, p95=2.6)
    node = _visited(evaluate_tree("nvidia", a100_server, base, defaults_for("datacenter_gpu"),
                                  catalog=CATALOG))["gpu.2"]
    assert node.result == "yes" and "23% < 50%" in node.evidence


def test_gpu_utilization_falls_back_to_the_batch_sweep(a100_server, make_baseline) -> None:
    flat = [{"batch": b, "latency_p50_ms": 5.0 * b, "samples_per_s": 200.0} for b in (1, 2, 4, 8)]
    base = make_baseline(device="cuda", target="nvidia", throughput=flat, p50=5.0, p95=5.5)
    path = evaluate_tree("nvidia", a100_server, base, defaults_for("datacenter_gpu"), catalog=CATALOG)
    visited = _visited(path)
    assert visited["gpu.2"].result == "no" and "utilization not sampled" in visited["gpu.2"].evidence
    assert visited["gpu.2.busy"].result == "noted"
    # Throughput does not grow with batch: batching is ruled out rather than assumed to help.
    assert visited["gpu.3a"].result == "ruled out"


def test_cpu_threads_already_right_skip_the_thread_step(cpu_server, make_baseline) -> None:
    path = evaluate_tree("cpu", cpu_server, make_baseline(intra=2, inter=1), defaults_for("cpu_server"),
                         catalog=CATALOG)
    visited = _visited(path)
    assert visited["cpu.2"].result == "yes"
    assert visited["cpu.3a"].result == "already done" and "already right" in visited["cpu.3a"].evidence
    assert "threads" not in [a.action.id for a in path.actions]


def test_still_missing_step_is_skipped_when_requirements_are_met(cpu_server, make_baseline) -> None:
    stated = load_requirements(device_class="cpu_server", overrides={"latency_ms": 50})
    path = evaluate_tree("cpu", cpu_server, make_baseline(p50=20.0, p95=22.0), stated, catalog=CATALOG)
    assert _visited(path)["cpu.5"].result == "skipped"
    assert "over-optimize" in _visited(path)["cpu.5"].evidence


def test_met_defaults_the_user_never_stated_still_reach_post_training_int8(cpu_server, make_baseline) -> None:
    path = evaluate_tree("cpu", cpu_server, make_baseline(p50=20.0, p95=22.0), defaults_for("cpu_server"),
                         catalog=CATALOG)
    assert _visited(path)["cpu.5"].result != "skipped"
    assert "you stated none: post-training INT8 is still measured" in _visited(path)["cpu.5"].evidence
    assert {ActionId.INT8_STATIC, ActionId.VENDOR_INT8} <= {a.action.id for a in path.actions}


def test_channels_last_is_ruled_out_for_non_image_input(cpu_server, make_baseline) -> None:
    path = evaluate_tree("cpu", cpu_server, make_baseline(input_shape=(1, 128)), defaults_for("cpu_server"),
                         catalog=CATALOG)
    node = _visited(path)["cpu.3c"]
    assert node.result == "ruled out" and "1x128 is not 4-D" in node.evidence


def test_precision_lowering_actions_are_fidelity_gated() -> None:
    gated = {a.id for a in ACTIONS.values() if a.fidelity_gated}
    assert {ActionId.GPU_FP16, "gpu.int8", ActionId.GPU_ENGINE, ActionId.INT8_STATIC, ActionId.EDGE_INT8,
            ActionId.TERNARY} <= gated
    assert not {ActionId.THREADS, ActionId.GRAPH_RUNTIME, ActionId.GPU_BATCH, ActionId.GPU_COMPILE} & gated


def test_decision_path_serialises(cpu_server, make_baseline) -> None:
    req = load_requirements(device_class="cpu_server", overrides={"latency_ms": 10})
    path = evaluate_tree("cpu", cpu_server, make_baseline(), req, catalog=CATALOG)
    data = json.loads(json.dumps(to_data(path.record())))
    assert data["target"] == "cpu" and data["actions"] and data["visited"][0]["id"] == "cpu"


def _walk(view):
    """Every node of a rendered tree, depth first."""
    yield view
    for child in view.children:
        yield from _walk(child)
