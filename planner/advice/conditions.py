"""The named conditions the decision trees evaluate: each reads the measurements and returns its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from planner import units
from planner.advice import _facts as facts
from planner.advice.checklist import (
    EDGE_SLOW_MS,
    GPU_LOW_UTILIZATION_PCT,
    Answer,
    AnswerStatus,
    BatchAssessment,
    ThreadAssessment,
    assess_batch,
    assess_threads,
    group_for,
)
from planner.advice.requirements import (
    CheckStatus,
    RequirementCheck,
    Requirements,
    all_met,
    evaluate,
)
from planner.hardware.profile import EDGE_DEVICE_CLASSES, DeviceClass, HardwareProfile

# Throughput must grow at least this much over the sweep before batching is worth its latency.
BATCH_GAIN_WORTH = 1.2
# Doubling throughput from batch 1 means batch 1 ran under half of what the GPU delivers: the
# GPU decision tree's <50% utilization test, read from the batch sweep when utilization was not sampled.
GPU_UNDERUSED_GAIN = 100.0 / GPU_LOW_UTILIZATION_PCT
# Host-device copies above this share of the model's p50 are worth removing.
TRANSFER_SHARE_WORTH = 0.10


@dataclass(frozen=True)
class Outcome:
    """What a condition decided (None: could not tell), the evidence, and options for the action."""

    value: bool | None
    evidence: str
    options: Mapping[str, Any] = field(default_factory=dict)
    fidelity_gated: bool | None = None  # overrides the action's own flag when set
    # The action is already in force (value is then False): the walk shows it as already done, never recommends
    # it, and the plan has no step for it.
    done: bool = False


@dataclass(frozen=True)
class TreeContext:
    """Everything a condition may read."""

    target: str
    hw: HardwareProfile
    baseline: Mapping[str, Any]
    requirements: Requirements
    answers: Mapping[str, Answer]
    checks: tuple[RequirementCheck, ...]
    threads: ThreadAssessment
    batch: BatchAssessment


def make_context(target: str, hw: HardwareProfile, baseline: Mapping[str, Any], requirements: Requirements,
                 checklist_answers: Sequence[Answer] | None) -> TreeContext:
    """The context conditions read, with the assessments computed once."""
    baseline = baseline or {}
    return TreeContext(
        target=str(target), hw=hw, baseline=baseline, requirements=requirements,
        answers={a.id: a for a in checklist_answers or ()},
        checks=tuple(evaluate(requirements, baseline)),
        threads=assess_threads(hw, baseline),
        batch=assess_batch(baseline, requirements.latency_ms),
    )


def _answer(ctx: TreeContext, suffix: str) -> Answer | None:
    return ctx.answers.get(f"{group_for(ctx.target)}.{suffix}")


def _profiled(ctx: TreeContext) -> Outcome:
    p50 = facts.latency(ctx.baseline, "p50")
    if p50 is None:
        return Outcome(False, "no baseline latency: profile before optimizing")
    samples = facts.latency_samples(ctx.baseline)
    info = facts.info(ctx.baseline)
    where = f" on {info['device']}" if info.get("device") else ""
    prec = f" ({info['precision']})" if info.get("precision") else ""
    count = f" over {samples} samples" if samples else ""
    return Outcome(True, f"baseline p50 {units.ms(p50)}{count}{where}{prec}")


def _on_target_device(ctx: TreeContext) -> Outcome:
    klass = facts.device_class(ctx.hw)
    outcome = _profiled(ctx)
    if klass in EDGE_DEVICE_CLASSES:
        return Outcome(outcome.value, f"{outcome.evidence}, on this {klass}")
    return Outcome(False, f"{outcome.evidence}, but on a {klass or 'machine of unknown class'}, not the edge "
                   "device: profile on the target device itself")


def _gpu_util_low(ctx: TreeContext) -> Outcome:
    util = facts.number(ctx.baseline.get("gpu_utilization_pct"))
    if util is not None:
        low = util < GPU_LOW_UTILIZATION_PCT
        threshold = units.pct(GPU_LOW_UTILIZATION_PCT / 100)
        return Outcome(low, f"GPU busy {units.pct(util / 100)} {'<' if low else '>='} {threshold} "
                       "during the baseline run")
    points = facts.sweep(ctx.baseline)
    if len(points) > 1 and ctx.batch.gain is not None:
        best = facts.best_point(points)
        low = ctx.batch.gain >= GPU_UNDERUSED_GAIN
        why = ("batch 1 used under half of what the GPU delivers" if low else
               "batch 1 already used over half of what the GPU delivers")
        return Outcome(low, f"utilization not sampled; from the batch sweep: throughput grows "
                       f"{units.speedup(ctx.batch.gain)} from batch {points[0].batch} to batch "
                       f"{best.batch if best else '?'}, "
                       f"so {why}")
    return Outcome(None, "utilization not sampled and no batch sweep: assume under-used, start from batch size")


def _batch_helps(ctx: TreeContext) -> Outcome:
    points = facts.sweep(ctx.baseline)
    if not points or ctx.batch.gain is None:
        return Outcome(None, "no batch sweep in the profile: the batching plugin measures the trade-off")
    sweep = facts.sweep_text(points)
    if ctx.batch.gain < BATCH_GAIN_WORTH:
        return Outcome(False, f"throughput grows only {units.speedup(ctx.batch.gain)} over the sweep ({sweep}): "
                       "bigger batches would add latency for little throughput")
    target = ctx.requirements.latency_ms
    best = facts.best_point(points)
    assert best is not None
    if target is None:
        return Outcome(True, f"throughput grows {units.speedup(ctx.batch.gain)} over the sweep ({sweep}); no latency "
                       "target is set, so the batch is bounded only by the sweep (set one: bigger batches add latency)",
                       {"max_batch": best.batch})
    rec = ctx.batch.recommended
    if rec is None or rec == points[0].batch:
        return Outcome(False, f"{ctx.batch.answer} ({sweep}): a bigger batch would break the latency target")
    return Outcome(True, f"throughput grows {units.speedup(ctx.batch.gain)} over the sweep ({sweep}); "
                   f"batch {rec} is the "
                   f"best inside < {units.ms(target)}", {"max_batch": rec, "latency_budget_ms": target})


def _user_says(ctx: TreeContext, suffix: str) -> Answer | None:
    answer = _answer(ctx, suffix)
    return answer if answer is not None and answer.status == AnswerStatus.USER else None


def _preprocessing_open(ctx: TreeContext) -> Outcome:
    reply = _user_says(ctx, "preprocessing")
    if reply is not None and isinstance(reply.value, bool):
        return Outcome(reply.value, f"you said: {reply.answer}")
    # Measured with --pipeline: the same either/or a reply gives, read from the split (see checklist._preprocessing).
    measured = _answer(ctx, "preprocessing")
    if (measured is not None and measured.status == AnswerStatus.AUTO and isinstance(measured.value, dict)
            and isinstance(measured.value.get("around_model"), bool)):
        return Outcome(measured.value["around_model"], f"measured with --pipeline: {measured.answer}")
    return Outcome(None, "not measurable by the planner without --pipeline (it times the model alone): "
                         "the checklist asks you")


def _transfers_open(ctx: TreeContext) -> Outcome:
    reply = _user_says(ctx, "transfers")
    if reply is not None and isinstance(reply.value, bool):
        return Outcome(reply.value, f"you said: {reply.answer}")
    transfer = facts.number(facts.info(ctx.baseline).get("transfer_ms"))
    p50 = facts.latency(ctx.baseline, "p50")
    if transfer is not None and p50:
        share = transfer / p50
        return Outcome(share >= TRANSFER_SHARE_WORTH,
                       f"host-device copies take {units.ms(transfer)}, {units.pct(share)} of p50 {units.ms(p50)}")
    return Outcome(None, "copy time not measured: the checklist asks you")


def _gpu_present(ctx: TreeContext) -> Outcome:
    gpu = facts.first_gpu(ctx.hw)
    if gpu is None:
        return Outcome(None, "no NVIDIA GPU detected here: this step cannot be measured on this machine")
    return Outcome(True, f"{getattr(gpu, 'name', 'GPU')}: applies to any model; measured to confirm")


def _has_tensor_cores(ctx: TreeContext) -> Outcome:
    gpu = facts.first_gpu(ctx.hw)
    if gpu is None:
        return Outcome(None, "no NVIDIA GPU detected here")
    name = getattr(gpu, "name", "GPU")
    generation = facts.gpu_tensor_cores(gpu)
    if generation is None:
        return Outcome(False, f"{name} has no tensor cores: FP16's typical 2x relies on them")
    return Outcome(True, f"{name} has {generation} tensor cores; the baseline ran in "
                   f"{facts.precision(ctx.baseline) or 'an unrecorded precision'}")


def _small_model(ctx: TreeContext) -> Outcome:
    bound = facts.bottleneck(ctx.baseline)
    if bound == "overhead":
        return Outcome(True, "the profile classifies the run as overhead-bound: launch overhead is what "
                       "CUDA graphs remove")
    if bound:
        return Outcome(False, f"the profile classifies the run as {bound}-bound: CUDA graphs remove only "
                       "launch overhead, which matters most in small models")
    return Outcome(None, "bottleneck class not in the profile: measured to find out")


def _threads_ok(ctx: TreeContext) -> Outcome:
    # The question is torch's (intra-op) thread count against the physical cores: equal is yes even
    # when something else about threading is off (inter-op threads, OMP_NUM_THREADS), which the
    # evidence names and the plan's notes repeat; the "set the threads" step is then already done.
    t = ctx.threads
    if t.ok is None or t.intra is None or not t.recommended:
        return Outcome(t.ok, t.evidence)
    equal = _intra_matches(t)
    issues = f" - {'; '.join(t.issues)}" if t.issues else ""
    if equal and t.issues:
        return Outcome(True, f"{t.evidence}: the count matches, but{issues.removeprefix(' -')}")
    return Outcome(equal, t.evidence + issues)


def _threads_wrong(ctx: TreeContext) -> Outcome:
    t = ctx.threads
    options = {"intra_op_threads": t.recommended or t.usable or 1, "inter_op_threads": 1}
    if t.ok is None:
        return Outcome(None, f"{t.evidence}: pin them explicitly", options)
    if t.ok:
        return Outcome(False, f"{t.evidence}: already right", options, done=True)
    if _intra_matches(t):
        # The step sets the intra-op threads, and they already are one per physical core: it is in force. What
        # else is off (inter-op threads, OMP_NUM_THREADS) is no reason to recommend it; the plan's notes name it.
        return Outcome(False, f"{t.evidence}: the intra-op threads already are one per physical core; "
                       f"left to you: {'; '.join(t.issues)}", options, done=True)
    return Outcome(True, f"{t.evidence} - {'; '.join(t.issues)}", options)


def _intra_matches(t: ThreadAssessment) -> bool:
    """Whether torch's intra-op thread count already equals the recommended one (the physical cores it may use)."""
    return (t.intra is not None and bool(t.recommended) and t.intra == t.recommended
            and not (t.usable and t.intra > t.usable))


def _mkldnn_off(ctx: TreeContext) -> Outcome:
    enabled = facts.info(ctx.baseline).get("mkldnn")
    vendor = facts.cpu_vendor(ctx.hw) or "unknown vendor"
    if enabled is True:
        return Outcome(False, f"torch.backends.mkldnn is already enabled ({vendor})", done=True)
    if not facts.is_intel(ctx.hw):
        # The tree advises MKLDNN for Intel CPUs: on another vendor that advice is not this CPU's.
        state = "off" if enabled is False else "not recorded"
        return Outcome(False, f"does not apply: this CPU is {vendor}, not Intel, and the tree advises enabling "
                       f"MKLDNN for Intel CPUs (torch.backends.mkldnn is {state}; oneDNN runs here too: enabling it "
                       "is yours to try)")
    if enabled is False:
        return Outcome(True, f"torch.backends.mkldnn is off ({vendor})")
    return Outcome(None, f"mkldnn state not recorded ({vendor}): check that PyTorch was built with oneDNN "
                         "(torch.backends.mkldnn)")


def _intel_cpu(ctx: TreeContext) -> Outcome:
    vendor = facts.cpu_vendor(ctx.hw)
    model = getattr(getattr(ctx.hw, "cpu", None), "model", "") or "the CPU"
    if not vendor:
        return Outcome(None, f"{model}: the vendor was not detected, so no Intel-only advice is taken")
    intel = facts.is_intel(ctx.hw)
    return Outcome(intel, f"{model}: an Intel CPU" if intel else f"{model}: made by {vendor}, not Intel")


def _cpu_compile(ctx: TreeContext) -> Outcome:
    return Outcome(True, "torch.compile (inductor) fuses operators into generated kernels and removes Python "
                   "overhead; the published 1.5-2x is for GPUs, so on this CPU it is measured to find out "
                   "(PyTorch models only; it needs a C compiler)")


def _image_input(ctx: TreeContext) -> Outcome:
    shape = facts.input_shape(ctx.baseline)
    if shape is None:
        return Outcome(None, "input shape not recorded: measured to find out")
    text = "x".join(str(d) for d in shape)
    if len(shape) == 4:
        return Outcome(True, f"input {text} is a 4-D image batch")
    return Outcome(False, f"input {text} is not 4-D: channels-last applies to NCHW image tensors")


def _cpu_runtime(ctx: TreeContext) -> Outcome:
    cpu = getattr(ctx.hw, "cpu", None)
    model = getattr(cpu, "model", "") or facts.cpu_vendor(ctx.hw) or "CPU"
    return Outcome(True, f"{model}, {getattr(cpu, 'usable_cores', '?')} usable cores: applies to any model")


def _openvino(ctx: TreeContext) -> Outcome:
    vendor = facts.cpu_vendor(ctx.hw).lower()
    arch = str(getattr(getattr(ctx.hw, "cpu", None), "architecture", "")).lower()
    if "intel" in vendor:
        why = "Intel CPU: the CPU decision tree names OpenVINO the best performer there"
    elif "amd" in vendor:
        why = "AMD CPU: the tree's claim is for Intel, but OpenVINO's CPU plugin runs here too: measured to find out"
    elif "arm" in arch or "aarch" in arch or facts.cpu_has(ctx.hw, "neon"):
        why = "ARM CPU: OpenVINO has an ARM CPU plugin; worth measuring"
    else:
        why = f"{vendor or 'unknown'} CPU: worth measuring"
    if any(facts.cpu_has(ctx.hw, f) for f in ("avx512_bf16", "amx_bf16", "amx_tile")):
        return Outcome(True, f"{why}; this CPU has bf16 units, where OpenVINO computes in bf16 by default, "
                       "so f32 and bf16 are separate candidates", {"inference_precision": ["f32", "bf16"]}, True)
    return Outcome(True, why)


def _cpu_batch(ctx: TreeContext) -> Outcome:
    if ctx.batch.gain is None:
        return Outcome(None, "no batch sweep in the profile: measure batch 1 against larger batches")
    return Outcome(True, f"{ctx.batch.answer} ({ctx.batch.evidence})",
                   {"batch": ctx.batch.recommended if ctx.batch.recommended is not None else "?"})


def _still_missing(ctx: TreeContext) -> Outcome:
    met = all_met(ctx.checks)
    # A latency met only on the median says so here too: met at p50, its percentile not measured.
    on_median = [c.name.replace("_", " ") for c in ctx.checks if c.status == CheckStatus.MET_AT_P50]
    only = f" ({' and '.join(on_median)} on p50 only: its percentile was not measured)" if on_median else ""
    if met is True and not getattr(ctx.requirements, "stated", True):
        # Defaults the user never chose must not cut the search: post-training INT8 is cheap and gated.
        return Outcome(None, f"the baseline meets the planner's default requirements{only}, but you stated none: "
                             "post-training INT8 is still measured (the fidelity check guards it); retraining waits")
    if met is True and not getattr(ctx.requirements, "speed_stated", True):
        # Only a speed target says fast enough: a budget of what may be lost bounds the candidates instead.
        return Outcome(None, f"the baseline meets every requirement{only}, but you set no latency or throughput "
                             "target: post-training INT8 is still measured within what you may lose (the fidelity "
                             "check guards it); retraining waits")
    if met is True:
        return Outcome(False, f"the baseline already meets every requirement{only}: stop here (don't over-optimize)")
    missed = [c.name.replace("_", " ") for c in ctx.checks if c.met is False]
    if missed:
        return Outcome(True, f"the baseline misses {', '.join(missed)} (see the requirement checks)")
    return Outcome(None, "requirements not fully judged from the baseline: apply if the steps above fall short")


def _slow_per_sample(ctx: TreeContext) -> Outcome:
    p50 = facts.latency(ctx.baseline, "p50")
    if p50 is None:
        return Outcome(None, "no baseline latency: profile on the device first")
    slow = p50 > EDGE_SLOW_MS
    return Outcome(slow, f"p50 {units.ms(p50)} {'>' if slow else '<='} {units.ms(EDGE_SLOW_MS)} per sample")


def _fits_in_ram(ctx: TreeContext) -> Outcome:
    peak, available = facts.peak_memory(ctx.baseline), facts.memory_available(ctx.hw)
    if peak is None or available is None:
        return Outcome(None, "peak memory or device RAM unknown")
    fits = peak < available
    return Outcome(fits, f"peak {units.size(peak)} {'<' if fits else '>='} {units.size(available)} available RAM")


def _ternary_wanted(ctx: TreeContext) -> Outcome:
    wanted = ctx.requirements.quantization
    tier = ctx.requirements.tier or "this device"
    if "ternary" in wanted:
        return Outcome(True, f"the device performance targets suggest {'/'.join(w.upper() for w in wanted)} for {tier}")
    return Outcome(False, f"the device performance targets suggest "
                   f"{'/'.join(w.upper() for w in wanted) or 'no quantization'} "
                   f"for {tier}, not ternary")


def _accelerator(ctx: TreeContext) -> Outcome:
    if facts.device_class(ctx.hw) == DeviceClass.JETSON:
        return Outcome(True, "this Jetson has an integrated GPU: plan it with --target nvidia")
    return Outcome(True, "needs added hardware; not measurable by this planner")


def _int8_hardware(ctx: TreeContext) -> Outcome:
    dot = [f for f in ("asimddp", "i8mm", "avx512_vnni", "avx_vnni") if facts.cpu_has(ctx.hw, f)]
    ran = f"the baseline ran in {facts.precision(ctx.baseline) or 'an unrecorded precision'}"
    if dot:
        return Outcome(True, f"{ran}; the CPU has {', '.join(dot)} int8 dot-product instructions")
    return Outcome(True, f"{ran}; the CPU reports no int8 dot-product instruction, so the gain may be "
                   "smaller than the method expects: measured to find out")


def _edge_runtime(ctx: TreeContext) -> Outcome:
    return Outcome(True, "the INT8 model of step a is measured through the edge.int8 plugin; TensorFlow Lite "
                   "with XNNPACK has no plugin in this planner")


def _measure_each(ctx: TreeContext) -> Outcome:
    return Outcome(True, "the planner measures every candidate with the same timer and checks its outputs "
                   "against the original")


CONDITIONS: Mapping[str, Callable[[TreeContext], Outcome]] = MappingProxyType({
    "profiled": _profiled,
    "on_target_device": _on_target_device,
    "gpu_util_low": _gpu_util_low,
    "batch_helps": _batch_helps,
    "preprocessing_open": _preprocessing_open,
    "transfers_open": _transfers_open,
    "gpu_present": _gpu_present,
    "has_tensor_cores": _has_tensor_cores,
    "small_model": _small_model,
    "threads_ok": _threads_ok,
    "threads_wrong": _threads_wrong,
    "mkldnn_off": _mkldnn_off,
    "intel_cpu": _intel_cpu,
    "cpu_compile": _cpu_compile,
    "image_input": _image_input,
    "cpu_runtime": _cpu_runtime,
    "openvino": _openvino,
    "cpu_batch": _cpu_batch,
    "still_missing": _still_missing,
    "slow_per_sample": _slow_per_sample,
    "fits_in_ram": _fits_in_ram,
    "ternary_wanted": _ternary_wanted,
    "accelerator": _accelerator,
    "int8_hardware": _int8_hardware,
    "edge_runtime": _edge_runtime,
    "measure_each": _measure_each,
})

