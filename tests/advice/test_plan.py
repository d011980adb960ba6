"""Plans: the method's order per target, the pitfalls it must respect, and what a user reads in the summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hardware_profiles import with_gpu
from plugin_catalog import CATALOG

from planner.advice import (
    StepKind,
    answer_checklist,
    defaults_for,
    load_requirements,
    make_plan,
)
from planner.codec import to_data

FINDINGS = [
    {"id": "F-small", "severity": "low", "layers": ["fc"], "evidence": "fc is 2% of time", "impact": 0.02,
     "impact_basis": "share of time", "title": "Tiny head", "advice": "leave it"},
    {"id": "F-big", "severity": "high", "layers": ["layer4.1.conv2"], "evidence": "7x7 conv at full resolution",
     "impact": 0.41, "impact_basis": "share of time", "title": "Replace the 7x7 stem", "advice": "use 3x3 convs"},
    {"id": "F-mid", "severity": "medium", "layers": ["conv1"], "evidence": "dense 3x3 convs", "impact": 0.2,
     "impact_basis": "share of time", "title": "Depthwise-separable convs", "advice": "retrain with them"},
    {"id": "F-rated", "severity": "high", "layers": [], "evidence": "no BN folding", "impact": None,
     "title": "Fold batch norm", "advice": "fold before export"},
]


def _slow_cpu_plan(hw, make_baseline, **kwargs):
    base = make_baseline(p50=120.0, p95=130.0, intra=1, inter=1, **kwargs)
    return make_plan(target="cpu", hw=hw, baseline=base, requirements=defaults_for("cpu_server"), catalog=CATALOG)


def test_cpu_plan_follows_the_method_order_and_never_plans_gpu_steps(big_cpu_server, make_baseline) -> None:
    plan = _slow_cpu_plan(big_cpu_server, make_baseline)
    assert not [p for p in plan.plugins if p.startswith("nvidia.")]
    titles = [s.title for s in plan.steps]
    assert plan.steps[0].plugins == ("cpu.torch",) and titles[0].startswith("Set intra-op threads to 8")
    assert plan.steps[1].plugins == ("cpu.torch",) and titles[1] == "Channels-last memory format"
    assert [s.plugins for s in plan.steps[2:4]] == [("cpu.onnxruntime",), ("cpu.openvino",)]
    int8 = next(s for s in plan.steps if "INT8" in s.title)
    assert int8.order > 4 and int8.kind == StepKind.MEASURE and int8.plugins == ("edge.int8",)
    assert int8.fidelity_gated
    assert int8.when == "if requirements are still missed after the steps above"
    assert plan.requirements_met is False and plan.summary.startswith("Requirements missed: latency")
    assert any(n.startswith("Threading (too many threads oversubscribe the cores)") for n in plan.notes)


def test_openvino_is_fidelity_gated_where_it_defaults_to_bf16(big_cpu_server, cpu_server, make_baseline) -> None:
    amx = next(s for s in _slow_cpu_plan(big_cpu_server, make_baseline).steps if s.plugins == ("cpu.openvino",))
    assert amx.fidelity_gated and "bf16" in amx.why and "Kept only if" in amx.expected
    plain = next(s for s in _slow_cpu_plan(cpu_server, make_baseline).steps if s.plugins == ("cpu.openvino",))
    assert not plain.fidelity_gated


def test_every_precision_lowering_step_says_it_is_fidelity_gated(a100_server, pi4, make_baseline) -> None:
    gpu = make_plan(target="nvidia", hw=a100_server,
                    baseline=make_baseline(device="cuda", target="nvidia", p50=80.0, p95=90.0),
                    requirements=defaults_for("datacenter_gpu"), catalog=CATALOG)
    edge = make_plan(target="edge", hw=pi4, baseline=make_baseline(p50=412.0, p95=430.0, intra=4),
                     requirements=defaults_for("raspberry_pi"), catalog=CATALOG)
    for plan in (gpu, edge):
        lowering = [s for s in plan.steps if any(w in s.title for w in ("FP16", "INT8", "Ternary"))]
        assert lowering and all(s.fidelity_gated and "accuracy drops by at most 1.00%" in s.expected
                                for s in lowering)


def test_gpu_plan_with_low_utilization_starts_from_batch_size(a100_server, make_baseline) -> None:
    sweep = [{"batch": b, "latency_p50_ms": 2.0 + 0.4 * b, "samples_per_s": 1000 * b / (2.0 + 0.4 * b)}
             for b in (1, 2, 4, 8, 16, 32, 64, 128)]
    base = make_baseline(device="cuda", target="nvidia", gpu_utilization=23, throughput=sweep, p50=2.4, p95=2.6,
                         bound="overhead")
    req = load_requirements(device_class="datacenter_gpu", overrides={"latency_ms": 20, "min_throughput": 3000})
    plan = make_plan(target="nvidia", hw=a100_server, baseline=base, requirements=req, catalog=CATALOG)
    first = plan.steps[0]
    assert first.plugins == ("nvidia.batching",) and "GPU busy 23% < 50%" in first.why
    # A bigger batch adds latency: the best batch inside the 20 ms target, not the biggest measured (128).
    assert first.options["max_batch"] == 32 and first.options["latency_budget_ms"] == 20.0
    assert plan.plugins[:5] == ("nvidia.batching", "nvidia.fp16", "nvidia.torch_compile", "nvidia.tensorrt",
                                "nvidia.cuda_graphs")
    assert not [p for p in plan.plugins if p.startswith(("cpu.", "edge."))]


def test_gpu_without_tensor_cores_skips_fp16_and_compute_bound_skips_cuda_graphs(a100_server,
                                                                                  make_baseline) -> None:
    a100_server = with_gpu(a100_server, compute_capability=(6, 0))  # pre-Volta: no tensor cores
    base = make_baseline(device="cuda", target="nvidia", p50=80.0, p95=90.0, bound="compute")
    plan = make_plan(target="nvidia", hw=a100_server, baseline=base, requirements=defaults_for("datacenter_gpu"),
                     catalog=CATALOG)
    assert "nvidia.fp16" not in plan.plugins and "nvidia.cuda_graphs" not in plan.plugins
    assert "nvidia.tensorrt" in plan.plugins


def test_nvidia_plan_on_a_machine_without_gpu_says_so(cpu_server, make_baseline) -> None:
    plan = make_plan(target="nvidia", hw=cpu_server, baseline=make_baseline(p50=80.0, p95=90.0),
                     requirements=defaults_for("cpu_server"), catalog=CATALOG)
    assert any("No NVIDIA GPU was detected" in n for n in plan.notes)


def test_edge_plan_for_a_slow_model_starts_with_a_smaller_architecture(pi4, make_baseline) -> None:
    plan = make_plan(target="edge", hw=pi4, baseline=make_baseline(p50=412.0, p95=430.0, intra=2),
                     requirements=defaults_for("raspberry_pi"), catalog=CATALOG)
    first = plan.steps[0]
    assert first.title.startswith("Smaller architecture") and first.plugins == ("architecture.redesign",)
    assert "p50 412 ms > 100 ms" in first.why
    assert [s.plugins for s in plan.steps[1:3]] == [("edge.int8",), ("cpu.torch",)]
    assert "Set intra-op threads to 4" in plan.steps[2].title
    assert not [p for p in plan.plugins if p.startswith("nvidia.")]


def test_edge_plan_on_a_jetson_points_at_its_gpu(jetson, make_baseline) -> None:
    plan = make_plan(target="edge", hw=jetson, baseline=make_baseline(p50=150.0, p95=160.0, intra=6),
                     requirements=load_requirements(device_class="jetson", overrides={"latency_ms": 50}),
                     catalog=CATALOG)
    accelerator = next(s for s in plan.steps if s.title.startswith("Hardware accelerator"))
    assert "--target nvidia" in accelerator.why
    assert not [p for p in plan.plugins if p.startswith("nvidia.")]


def test_requirements_already_met_says_so_and_what_more_would_buy(cpu_server, make_baseline) -> None:
    stated = load_requirements(device_class="cpu_server", overrides={"latency_ms": 50})
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=22.0, findings=FINDINGS),
                     requirements=stated, catalog=CATALOG)
    assert plan.requirements_met is True
    assert plan.summary.startswith("Requirements already met: latency: 22 ms vs < 50 ms: met with 56% headroom")
    assert "What more work would buy" in plan.summary and "don't over-optimize" in plan.summary
    assert plan.steps and all(s.optional and s.kind == StepKind.MEASURE for s in plan.steps)
    assert not any(s.fidelity_gated or s.phase == 3 for s in plan.steps)
    assert any("4 architecture finding(s)" in n for n in plan.notes)


def test_met_defaults_still_measure_the_runtime_switches(cpu_server, make_baseline) -> None:
    """Defaults the user never stated do not stop OpenVINO, ONNX Runtime or post-training INT8; retraining waits."""
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=22.0, findings=FINDINGS),
                     requirements=defaults_for("cpu_server"), catalog=CATALOG)
    assert plan.requirements_met is True
    assert plan.summary.startswith("The planner's default requirements are already met")
    assert "runtime switches" in plan.summary and "post-training INT8" in plan.summary
    assert "Retraining (pruning, a new architecture) is left out" in plan.summary
    assert {"cpu.onnxruntime", "cpu.openvino", "cpu.openvino_int8"} <= set(plan.plugins)
    # INT8 after training is guarded by the fidelity check; nothing that needs retraining is planned.
    assert all(s.fidelity_gated for s in plan.steps if s.phase > 1)
    assert not any(s.phase == 3 or any(p.startswith("architecture.") for p in s.plugins) for s in plan.steps)
    assert all(s.optional for s in plan.steps)


def test_met_requirements_leave_out_findings_and_say_only_the_redesigns_need_retraining(cpu_server,
                                                                                      make_baseline) -> None:
    """Issue 38: BatchNorm folding, which the finding and its plugin both call exact, was said to need retraining."""
    folding = {"id": "unfused-conv-bn", "severity": "low", "layers": ["conv1", "bn1"], "impact": 0.12,
               "impact_basis": "share of measured time", "title": "1 conv/BatchNorm chain left unfused",
               "advice": "fold it", "exact": True}
    plan = make_plan(target="cpu", hw=cpu_server, requirements=defaults_for("cpu_server"), catalog=CATALOG,
                     baseline=make_baseline(p50=20.0, p95=22.0, findings=[*FINDINGS, folding]))
    assert plan.requirements_met is True
    note = next(n for n in plan.notes if "architecture finding(s)" in n)
    assert note == ("5 architecture finding(s) from the profile are not planned: the requirements are met; 4 need "
                    "retraining, 1 is an exact rewrite (the same outputs, no retraining) that a missed requirement "
                    "would plan.")
    # Missed, it is planned, as the exact rewrite it is.
    missed = _slow_cpu_plan(cpu_server, make_baseline, findings=[*FINDINGS, folding])
    step = next(s for s in missed.steps if s.source == "finding:unfused-conv-bn")
    assert "needs retraining" not in step.expected


def test_what_a_finding_calls_exact_its_plugins_declare_exact() -> None:
    """The findings that can say 'exact' and the plugins measuring their action agree: both are read, never names."""
    from planner.advice.plan import FINDING_ACTIONS
    from planner.plugins.declarations import Arithmetic

    for finding in ("unfused-conv-bn", "channel-alignment"):  # the rules that set `exact`
        plugins = CATALOG.serving(FINDING_ACTIONS[finding], "cpu")
        assert plugins and {CATALOG.get(p).arithmetic for p in plugins} == {Arithmetic.NONE}, finding


def test_top_three_architecture_findings_become_phase_3_advice(cpu_server, make_baseline) -> None:
    plan = _slow_cpu_plan(cpu_server, make_baseline, findings=FINDINGS)
    phase3 = [s for s in plan.steps if s.source.startswith("finding:")]
    assert [s.title for s in phase3] == ["Replace the 7x7 stem", "Depthwise-separable convs", "Tiny head"]
    assert all(s.phase == 3 and not s.plugins and "needs retraining" in s.expected for s in phase3)
    assert "impact 0.41 (share of time)" in phase3[0].why
    assert phase3[0].order > max(s.order for s in plan.steps if not s.source.startswith("finding:"))
    assert any("1 more architecture finding(s)" in n for n in plan.notes)


def test_an_exact_rewrite_is_planned_beyond_the_top_three(cpu_server, make_baseline) -> None:
    """Channel padding computes the same function: it is measured even when three larger findings come first."""
    aligned = {"id": "channel-alignment", "severity": "medium", "layers": ["conv2"], "impact": 0.01,
               "impact_basis": "idle lanes", "title": "Channels not divisible by 8", "advice": "pad them"}
    plan = _slow_cpu_plan(cpu_server, make_baseline, findings=[*FINDINGS, aligned])
    phase3 = [s for s in plan.steps if s.source.startswith("finding:")]
    assert [s.title for s in phase3][-1] == "Channels not divisible by 8"
    step = phase3[-1]
    assert step.plugins == ("architecture.align",) and "needs retraining" not in step.expected
    assert "exact, no retraining" in step.expected
    assert any("1 more architecture finding(s)" in n and "every exact rewrite" in n for n in plan.notes)


def test_a_finding_gives_the_plan_its_target_advice(cpu_server, a100_server, make_baseline) -> None:
    """A profile made on a CPU, planned for a GPU: the depthwise step carries the GPU caveat, not the CPU advice."""
    from planner.analysis.rules import DEPTHWISE_ADVICE

    depthwise = {"id": "depthwise-candidates", "severity": "medium", "layers": ["conv1"], "impact": 0.4,
                 "impact_basis": "share of time", "title": "Dense 3x3 convs", "advice": DEPTHWISE_ADVICE["cpu"],
                 "advice_by_target": DEPTHWISE_ADVICE}
    overhead = {"id": "overhead-bound", "severity": "high", "layers": [], "impact": 0.9, "title": "Overhead-bound",
                "advice": "use ONNX Runtime", "category": "runtime"}
    gpu = make_plan(target="nvidia", hw=a100_server,
                    baseline=make_baseline(device="cuda", target="nvidia", p50=80.0, p95=90.0,
                                           findings=[depthwise, overhead]),
                    requirements=defaults_for("datacenter_gpu"), catalog=CATALOG)
    step = next(s for s in gpu.steps if s.source == "finding:depthwise-candidates")
    assert "Measure before retraining" in step.expected and "dense 3x3 convs often run faster" in step.expected
    # What removes overhead is a runtime matter, planned by the runtime steps: not a retraining step.
    assert not [s for s in gpu.steps if s.source == "finding:overhead-bound"]
    cpu = _slow_cpu_plan(cpu_server, make_baseline, findings=[depthwise])
    step = next(s for s in cpu.steps if s.source == "finding:depthwise-candidates")
    assert "Measure before retraining" not in step.expected and "On CPUs" in step.expected


def test_met_on_the_median_only_is_named_so_in_the_plan_summary(cpu_server, make_baseline) -> None:
    """A quick run's 12 samples show no p95: the planner's default p95 is judged on p50, and the summary says so."""
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=None, samples=12),
                     requirements=defaults_for("cpu_server"), catalog=CATALOG)
    assert plan.requirements_met is True
    assert plan.summary.startswith("The planner's default requirements are already met (latency judged on p50 "
                                   "only: its percentile was not measured): latency: judged on p50")
    walked = {v.id: v for v in plan.path.visited} if plan.path else {}
    assert "latency on p50 only" in walked["cpu.5"].evidence


def test_impossible_requirement_leads_the_summary(cpu_server, make_baseline) -> None:
    req = load_requirements(device_class="cpu_server", overrides={"latency_ms": 0.001})
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(), requirements=req, catalog=CATALOG)
    assert plan.requirements_met is False
    assert plan.summary.startswith("Cannot be met as specified: latency: < 0.001 ms p95 cannot be met")


def test_unjudged_requirements_give_the_full_method(cpu_server, make_baseline) -> None:
    # A p95 the user asked for cannot be judged from 12 samples (the planner's default p95 is judged on p50).
    chosen = load_requirements(device_class="cpu_server", overrides={"latency_percentile": "p95"})
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=None, samples=12),
                     requirements=chosen, catalog=CATALOG)
    assert plan.requirements_met is None and "not fully judged" in plan.summary
    assert any(s.when for s in plan.steps)


def test_user_reply_rules_out_preprocessing_advice(a100_server, make_baseline) -> None:
    base = make_baseline(device="cuda", target="nvidia", gpu_utilization=20, p50=80.0, p95=90.0)
    req = defaults_for("datacenter_gpu")
    answers = answer_checklist("nvidia", a100_server, base, requirements=req)
    replied = [a.with_reply("the model is 95% of each request", value=False) if a.id == "gpu.preprocessing" else a
               for a in answers]
    before = make_plan(target="nvidia", hw=a100_server, baseline=base, requirements=req, answers=answers,
                       catalog=CATALOG)
    after = make_plan(target="nvidia", hw=a100_server, baseline=base, requirements=req, answers=replied,
                      catalog=CATALOG)
    assert any("preprocessing" in s.title for s in before.steps)
    assert not any("preprocessing" in s.title for s in after.steps)


def test_plan_serialises_for_results_json(pi4, make_baseline) -> None:
    plan = make_plan(target="edge", hw=pi4, baseline=make_baseline(p50=412.0, findings=FINDINGS),
                     requirements=defaults_for("raspberry_pi"), catalog=CATALOG)
    data = json.loads(json.dumps(to_data(plan.record())))
    assert data["schema"] == 1 and data["target"] == "edge"
    assert [s["order"] for s in data["steps"]] == list(range(1, len(data["steps"]) + 1))
    assert data["requirements"]["sources"]["latency_ms"] == "default for Edge (device performance targets)"
    assert data["checklist"] and data["decision_path"]["visited"]


def test_unknown_target_is_rejected(cpu_server, make_baseline) -> None:
    with pytest.raises(ValueError, match="nvidia, cpu, edge"):
        make_plan(target="tpu", hw=cpu_server, baseline=make_baseline(), requirements=defaults_for("cpu_server"),
                  catalog=CATALOG)


def test_advice_imports_without_torch_or_textual() -> None:
    code = ("import sys, planner.advice; "
            "print(','.join(m for m in ('torch', 'textual', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_an_accuracy_budget_alone_bounds_the_search_but_does_not_end_it(cpu_server, make_baseline) -> None:
    """A user who states only what they may lose wants the fastest candidate within it, not the baseline."""
    stated = load_requirements(device_class="cpu_server", overrides={"accuracy_drop": 0.01})
    assert stated.stated and not stated.speed_stated
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=22.0, findings=FINDINGS),
                     requirements=stated, catalog=CATALOG)
    assert plan.requirements_met is True
    assert "search goes on for the fastest within it" in plan.summary
    assert {"cpu.onnxruntime", "cpu.openvino", "cpu.openvino_int8"} <= set(plan.plugins)
    assert not any(s.phase == 3 or any(p.startswith("architecture.") for p in s.plugins) for s in plan.steps)
    # The same budget beside a latency target the baseline meets: fast enough, so only the quick checks.
    fast_enough = load_requirements(device_class="cpu_server", overrides={"accuracy_drop": 0.01, "latency_ms": 50})
    plan = make_plan(target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=22.0, findings=FINDINGS),
                     requirements=fast_enough, catalog=CATALOG)
    assert not any(s.fidelity_gated for s in plan.steps)
