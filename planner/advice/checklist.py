"""The profiling checklist as data, answered from measurements with evidence or left to the user."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from planner import units
from planner.advice import _facts as facts
from planner.advice.requirements import Requirements
from planner.codec import from_data
from planner.hardware.profile import EDGE_DEVICE_CLASSES, HardwareProfile
from planner.results.decisions import AnswerRecord, AnswerStatus, Group  # below advice so results can hold them
from planner.results.pipeline_split import PipelineSplit

# The edge decision tree: more than this per sample means the model is too large for the device.
EDGE_SLOW_MS = 100.0
# The GPU decision tree: a GPU busy less than this share of the time is under-used.
GPU_LOW_UTILIZATION_PCT = 50.0


TARGET_GROUPS: Mapping[str, Group] = {"nvidia": Group.GPU, "cpu": Group.CPU, "edge": Group.EDGE}


@dataclass(frozen=True)
class Question:
    """One checklist question: its id, group, the checklist's wording and hint, and how the planner answers it."""

    id: str
    group: Group
    text: str
    hint: str
    answered_by: str
    source: str = "the profiling checklist"
    # The replies the user picks from, each with the value the decision trees read: yes/no for a
    # yes-or-no question, the alternatives themselves for an either/or one.
    choices: tuple[tuple[str, bool], ...] = (("yes", True), ("no", False))


_PREPROCESSING_TEXT = "Is the model the bottleneck, or the work around it (decoding, preprocessing, copies)?"
_PREPROCESSING_HOW = "only your serving pipeline shows this; the planner times the model call alone"
_PREPROCESSING_SOURCE = ("a common profiling pitfall: speeding up the model while the work around it is the "
                         "bottleneck; and when not to optimize")
# Either/or: True means the work around the model is the bottleneck (what the trees act on).
_PREPROCESSING_CHOICES = (("the model itself", False), ("the work around it", True))

QUESTIONS: tuple[Question, ...] = (
    Question("gpu.utilization", Group.GPU, "What is GPU utilization?", "nvidia-smi",
             "GPU busy % sampled through NVML while the baseline ran"),
    Question("gpu.memory", Group.GPU, "What is memory utilization?", "",
             "the baseline's peak memory against the GPU's total"),
    Question("gpu.slowest_ops", Group.GPU, "What are the slowest operations?", "PyTorch profiler",
             "per-layer times from the baseline profile"),
    Question("gpu.transfers", Group.GPU, "Is there CPU-GPU transfer overhead?", "copies between host and GPU",
             "host-device copy time when the profile measured it; otherwise your serving code"),
    Question("gpu.batch", Group.GPU, "Is batch size optimal?", "measure latency/throughput",
             "the baseline's batch sweep against the latency target"),
    Question("gpu.tensor_cores", Group.GPU, "Are Tensor Cores being used?", "FP16/INT8 operations",
             "the GPU's compute capability and the precision the baseline ran in"),
    Question("gpu.preprocessing", Group.GPU, _PREPROCESSING_TEXT, "profile the whole request",
             _PREPROCESSING_HOW, _PREPROCESSING_SOURCE, _PREPROCESSING_CHOICES),
    Question("cpu.utilization", Group.CPU, "What is CPU utilization?", "all cores used?",
             "CPU busy % when sampled; otherwise torch's thread pool against the usable cores"),
    Question("cpu.threading", Group.CPU, "What is threading configuration?", "intra-op threads against physical cores",
             "torch's intra-/inter-op threads recorded with the baseline against the physical cores"),
    Question("cpu.slowest_ops", Group.CPU, "What are the slowest operations?", "PyTorch profiler",
             "per-layer times from the baseline profile"),
    Question("cpu.mkldnn", Group.CPU, "Is MKLDNN enabled?", "Intel CPUs",
             "torch.backends.mkldnn as recorded with the baseline, and the CPU vendor"),
    Question("cpu.batch", Group.CPU, "Is batch size optimal?", "may be smaller for CPU",
             "the baseline's batch sweep against the latency target"),
    Question("cpu.preprocessing", Group.CPU, _PREPROCESSING_TEXT, "profile the whole request",
             _PREPROCESSING_HOW, _PREPROCESSING_SOURCE, _PREPROCESSING_CHOICES),
    Question("edge.latency", Group.EDGE, "What is inference latency on target device?",
             "not development machine!", "the baseline latency, if this machine is the edge device"),
    Question("edge.memory", Group.EDGE, "What is memory usage?", "fits in device RAM?",
             "the baseline's peak memory against this device's RAM"),
    Question("edge.quantized", Group.EDGE, "Is model quantized to INT8?", "critical for ARM",
             "the precision the baseline ran in, and the CPU's int8 dot-product support"),
    Question("edge.threading", Group.EDGE, "Is threading configured for device cores?", "",
             "torch's threads recorded with the baseline against the device's cores"),
    Question("edge.architecture", Group.EDGE, "Is model architecture appropriate for device?", "too large?",
             f"latency per sample against the edge decision tree's {units.ms(EDGE_SLOW_MS)} threshold, and size"),
    Question("edge.preprocessing", Group.EDGE, _PREPROCESSING_TEXT, "profile the whole request",
             _PREPROCESSING_HOW, _PREPROCESSING_SOURCE, _PREPROCESSING_CHOICES),
)

QUESTIONS_BY_ID: Mapping[str, Question] = {q.id: q for q in QUESTIONS}


def questions_for(target: str) -> tuple[Question, ...]:
    """The checklist questions for a target ('nvidia', 'cpu' or 'edge')."""
    group = group_for(target)
    return tuple(q for q in QUESTIONS if q.group == group)


def group_for(target: str) -> Group:
    """The checklist group of a deployment target."""
    try:
        return TARGET_GROUPS[str(target)]
    except KeyError:
        raise ValueError(f"unknown target {target!r}: expected one of {', '.join(TARGET_GROUPS)}") from None


@dataclass(frozen=True)
class Answer:
    """One answered (or open) question: answer, evidence with numbers, status, a prompt for the user, a value."""

    question: Question
    answer: str
    evidence: str
    status: AnswerStatus
    prompt: str | None = None
    value: Any = None  # JSON-safe facts the decision trees read (bools, numbers, small dicts)

    @property
    def id(self) -> str:
        """The question's id."""
        return self.question.id

    def with_reply(self, reply: str, *, value: Any = None) -> Answer:
        """This answer filled in by the user (status 'user'); `value` is what the trees read (e.g. a bool).

        A reply that names one of the question's choices takes that choice's value.
        """
        chosen = {label.lower(): v for label, v in self.question.choices}.get(reply.strip().lower())
        if chosen is not None:
            value = chosen
        return replace(self, answer=reply, status=AnswerStatus.USER, value=value,
                       evidence=f"user reply (the planner could not measure this): {reply}")

    def record(self) -> AnswerRecord:
        """This answer as results hold it: the question's fields flattened beside the answer."""
        return AnswerRecord(id=self.question.id, group=self.question.group, question=self.question.text,
                            hint=self.question.hint, answered_by=self.question.answered_by, answer=self.answer,
                            evidence=self.evidence, status=self.status, prompt=self.prompt, value=self.value)



# ---- shared assessments (the trees use these too) ---------------------------------------------------

@dataclass(frozen=True)
class ThreadAssessment:
    """torch's thread settings against the cores this process may use; ok is None when not recorded."""

    intra: int | None
    inter: int | None
    usable: int | None
    physical: int | None
    recommended: int | None
    ok: bool | None
    issues: tuple[str, ...]
    evidence: str

    # Kept: the answer's value leaves out `evidence`, which the answer already carries.
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"intra": self.intra, "inter": self.inter, "usable": self.usable, "physical": self.physical,
                "recommended": self.recommended, "ok": self.ok, "issues": list(self.issues)}


def assess_threads(hw: HardwareProfile, baseline: Mapping[str, Any]) -> ThreadAssessment:
    """Compare torch's intra/inter-op threads with the physical cores the process may use (no oversubscription)."""
    cpu = getattr(hw, "cpu", None)
    usable = facts.number(getattr(cpu, "usable_cores", None))
    physical = facts.number(getattr(cpu, "physical_cores", None))
    logical = facts.number(getattr(cpu, "logical_cores", None))
    usable_i = int(usable) if usable else None
    physical_i = int(physical) if physical else None
    # Physical cores, not hyperthreads, but never more than a cgroup/affinity allows.
    cores = [int(v) for v in (physical or logical, usable) if v]
    recommended = min(cores) if cores else None
    intra, inter = facts.torch_threads(baseline)
    core_text = (f"{physical_i} physical" if physical_i else "physical count unknown") + (
        f", {int(logical)} logical" if logical else "")
    if facts.onnx_only(baseline):
        # torch's pools may exist in the measuring process, but they do not run this model: its runtime's do.
        return ThreadAssessment(None, None, usable_i, physical_i, recommended, None,
                                (f"{facts.ONNX_ONLY}: torch's thread counts do not apply to it",),
                                f"{facts.ONNX_ONLY}, so torch's thread counts do not apply: its runtime's own "
                                f"intra-op threads run it, set by each runtime candidate; {usable_i or '?'} usable "
                                f"cores ({core_text})")
    if intra is None:
        return ThreadAssessment(None, inter, usable_i, physical_i, recommended, None,
                                ("torch's thread counts were not recorded with the baseline",),
                                f"thread settings not recorded; {usable_i or '?'} usable cores ({core_text})")
    evidence = (f"torch uses {intra} of {usable_i if usable_i else '?'} usable cores "
                f"(intra-op threads; {core_text})" + (f"; inter-op {inter}" if inter is not None else ""))
    issues: list[str] = []
    if usable_i and intra > usable_i:
        issues.append(f"{intra} intra-op threads on {usable_i} usable cores oversubscribes them:"
                      " threads then wait for each other")
    elif recommended and intra < recommended:
        issues.append(f"{intra} intra-op thread(s) for {recommended} physical cores: "
                      f"set intra-op threads to {recommended}")
    elif recommended and intra > recommended:
        issues.append(f"{intra} intra-op threads count hyperthreads; set one per physical core ({recommended})")
    if inter is not None and inter > 1:
        issues.append(f"inter-op threads {inter}: set it to 1 so the two thread pools do not oversubscribe the cores")
    omp = facts.env_threads(baseline, "OMP_NUM_THREADS")
    if omp is not None and omp != intra:
        issues.append(f"OMP_NUM_THREADS={omp} but torch uses {intra}: other OpenMP pools may oversubscribe the cores")
    return ThreadAssessment(intra, inter, usable_i, physical_i, recommended, not issues, tuple(issues), evidence)


@dataclass(frozen=True)
class BatchAssessment:
    """The batch sweep read against the latency target (a bigger batch adds latency): which batch to use and why."""

    recommended: int | None
    gain: float | None  # best throughput over batch-1 (first point) throughput
    evidence: str
    answer: str


def assess_batch(baseline: Mapping[str, Any], latency_ms: float | None) -> BatchAssessment:
    """Pick the batch with the best throughput whose batch latency still meets the latency target."""
    points = facts.sweep(baseline)
    if not points:
        return BatchAssessment(None, None, "no batch sweep in the profile", "Not measured")
    first, best = points[0], facts.best_point(points)
    assert best is not None
    gain = best.samples_per_s / first.samples_per_s
    knee = facts.knee_batch(baseline)
    evidence = facts.sweep_text(points) + (f" (throughput stops growing at batch {knee})" if knee else "")
    if latency_ms is None:
        return BatchAssessment(None, gain, evidence,
                               f"Cannot choose: throughput peaks at batch {best.batch} "
                               f"({units.rate(best.samples_per_s)}), "
                               "but no latency target is set, and a bigger batch adds latency")
    within = facts.best_point(points, max_latency_ms=latency_ms)
    if within is None:
        return BatchAssessment(first.batch, gain, evidence,
                               f"No batch meets < {units.ms(latency_ms)}: batch {first.batch} already takes "
                               f"{units.ms(first.latency_p50_ms)}")
    if within.batch == first.batch:
        answer = (f"Batch {within.batch} is best inside < {units.ms(latency_ms)}: "
                  f"{units.rate(within.samples_per_s)} at {units.ms(within.latency_p50_ms)} per batch")
    else:
        factor = units.speedup(within.samples_per_s / first.samples_per_s)
        answer = (f"Batch {within.batch}: {units.rate(within.samples_per_s)} ({factor} "
                  f"batch {first.batch}) with {units.ms(within.latency_p50_ms)} per batch, "
                  f"inside < {units.ms(latency_ms)}")
    return BatchAssessment(within.batch, gain, evidence, answer)


def slowest_layers_text(baseline: Mapping[str, Any], *, count: int = 3) -> str | None:
    """The slowest layers with their share of the time, e.g. 'conv1 (Conv2d) 2.1 ms, 41%'."""
    rows = facts.layers_by_time(baseline)[:count]
    if not rows:
        return None
    parts = []
    for row in rows:
        share = facts.number(row.get("time_share"))
        kind = f" ({row['type']})" if row.get("type") else ""
        parts.append(f"{row.get('name', '?')}{kind} {units.ms(float(row['time_ms']))}"
                     + (f", {units.pct(share)}" if share is not None else ""))
    return "; ".join(parts)


# ---- the answerers ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Inputs:
    """What every answerer reads."""

    hw: HardwareProfile
    baseline: Mapping[str, Any]
    requirements: Requirements | None


_Answerer = Callable[[Question, _Inputs], Answer]


def _latency_target(inp: _Inputs) -> float | None:
    return inp.requirements.latency_ms if inp.requirements is not None else None


def _gpu_utilization(q: Question, inp: _Inputs) -> Answer:
    util = facts.number(inp.baseline.get("gpu_utilization_pct"))
    if util is not None:
        low = util < GPU_LOW_UTILIZATION_PCT
        verdict = (f"low: under {units.pct(GPU_LOW_UTILIZATION_PCT / 100)}, the GPU waits on something"
                   if low else "the GPU is the busy part")
        return Answer(q, f"{units.pct(util / 100)} busy during the baseline run ({verdict})",
                      f"NVML utilization sampled during the run: {units.pct(util / 100)}", AnswerStatus.AUTO,
                      value={"utilization_pct": util, "low": low})
    gpu = facts.first_gpu(inp.hw)
    snapshot = facts.number(getattr(gpu, "utilization_pct", None)) if gpu is not None else None
    extra = (f"; nvidia-smi read {units.pct(snapshot / 100)} when the hardware was detected, which describes the "
             "machine at that moment, not this model") if snapshot is not None else ""
    return Answer(q, "Not measured during the model run", f"no utilization samples in the profile{extra}",
                  AnswerStatus.NOT_MEASURED)


def _gpu_memory(q: Question, inp: _Inputs) -> Answer:
    peak = facts.peak_memory(inp.baseline)
    gpu = facts.first_gpu(inp.hw)
    total = facts.number(getattr(gpu, "memory_total_bytes", None)) if gpu is not None else None
    basis = inp.baseline.get("memory_basis") or "peak memory"
    if peak is None:
        return Answer(q, "Not measured", "no peak memory in the profile", AnswerStatus.NOT_MEASURED)
    if not total:
        return Answer(q, f"Peak {units.size(peak)}", f"{basis}: {units.size(peak)}; GPU memory size unknown",
                      AnswerStatus.AUTO, value={"peak_bytes": peak})
    share = peak / total
    return Answer(q, f"Peak {units.size(peak)} of {units.size(total)} ({units.pct(share)})",
                  f"{basis}: {units.size(peak)}; {getattr(gpu, 'name', 'GPU')} has {units.size(total)}",
                  AnswerStatus.AUTO, value={"peak_bytes": peak, "share": round(share, 4)})


def _slowest_ops(q: Question, inp: _Inputs) -> Answer:
    text = slowest_layers_text(inp.baseline)
    if text is None:
        why = (f"{facts.ONNX_ONLY}: the per-layer profile times a PyTorch module's layers"
               if facts.onnx_only(inp.baseline) else "no per-layer times in the profile")
        return Answer(q, "Not measured", why, AnswerStatus.NOT_MEASURED)
    rows = facts.layers_by_time(inp.baseline)
    return Answer(q, f"Slowest: {rows[0].get('name', '?')}", f"per-layer times: {text}", AnswerStatus.AUTO,
                  value={"slowest": [row.get("name") for row in rows[:3]]})


def _gpu_transfers(q: Question, inp: _Inputs) -> Answer:
    transfer = facts.number(facts.info(inp.baseline).get("transfer_ms"))
    p50 = facts.latency(inp.baseline, "p50")
    if transfer is not None:
        share = f" ({units.pct(transfer / p50)} of p50 {units.ms(p50)})" if p50 else ""
        return Answer(q, f"Host-device copies take {units.ms(transfer)} per call{share}",
                      f"copy time measured with the baseline: {units.ms(transfer)}{share}", AnswerStatus.AUTO,
                      value={"transfer_ms": transfer})
    return Answer(q, "Not measurable here: the planner times the model with its inputs already prepared",
                  "no host-device copy timing in the profile", AnswerStatus.ASK_USER,
                  prompt=_transfers_prompt(inp.baseline))


def _transfers_prompt(baseline: Mapping[str, Any]) -> str:
    """What to time in the user's server, in the words of the framework that runs the model."""
    how = ("ONNX Runtime copies host inputs to the GPU on every run unless they are bound there with IOBinding"
           if facts.onnx_only(baseline) else "PyTorch's .cuda or .to('cuda'), and .cpu for the outputs")
    return (f"Does your server copy each request's input to the GPU and its outputs back to the host ({how})? "
            "Time those copies against the model call; if they are a large share, batch them or keep tensors on "
            "the GPU.")


def _batch(q: Question, inp: _Inputs) -> Answer:
    batch = assess_batch(inp.baseline, _latency_target(inp))
    if batch.gain is None:
        return Answer(q, batch.answer, batch.evidence, AnswerStatus.NOT_MEASURED)
    return Answer(q, batch.answer, batch.evidence, AnswerStatus.AUTO,
                  value={"recommended_batch": batch.recommended, "throughput_gain": round(batch.gain, 3)})


def _tensor_cores(q: Question, inp: _Inputs) -> Answer:
    gpu = facts.first_gpu(inp.hw)
    if gpu is None:
        return Answer(q, "No NVIDIA GPU detected", "the hardware profile lists no GPU", AnswerStatus.NOT_MEASURED)
    name = getattr(gpu, "name", "GPU")
    generation = facts.gpu_tensor_cores(gpu)
    cc = getattr(gpu, "compute_capability", None)
    cc_text = f"cc {cc[0]}.{cc[1]}" if cc else "compute capability unknown"
    precision = facts.precision(inp.baseline) or "unknown precision"
    if generation is None:
        return Answer(q, f"No: {name} has no tensor cores", f"{name}, {cc_text}", AnswerStatus.AUTO,
                      value={"has_tensor_cores": False, "used": False})
    used = precision in ("fp16", "bf16", "int8")
    answer = (f"Yes: the baseline ran in {precision} on {generation} tensor cores" if used else
              f"Not by the baseline: it ran in {precision}; {name} has {generation} tensor cores for FP16/INT8")
    return Answer(q, answer, f"{name}, {cc_text}, tensor cores {generation}; baseline precision {precision}",
                  AnswerStatus.AUTO, value={"has_tensor_cores": True, "used": used})


def _preprocessing(q: Question, inp: _Inputs) -> Answer:
    """The measured split when `--pipeline` timed the user's requests; else (or when it failed) the user's to answer.

    The value is what a user's reply gives the trees (True: the work around the model is the bottleneck),
    with the split beside it: {"around_model": bool, "model_share", "preprocess_share", "postprocess_share"}.
    """
    recorded = inp.baseline.get("pipeline")
    split = from_data(recorded, PipelineSplit) if isinstance(recorded, Mapping) and recorded else None
    prompt = ("Time one request end to end in your serving code: how much is decoding, resizing, normalising and "
              "copying, against the model call? If that part dominates, speeding up the model will not help (a "
              "common profiling pitfall). `planner plan --pipeline FILE.py:PRE[,POST] --trust-code` measures it "
              "with your own functions.")
    if split is None:
        return Answer(q, "Not measurable here: the planner times the model call alone",
                      "the profile covers the model only", AnswerStatus.ASK_USER, prompt=prompt)
    if not split.measured:
        return Answer(q, "Not measured: your --pipeline could not be timed",
                      f"--pipeline {split.pipeline}: {split.error}" + (f" (fix: {split.fix})" if split.fix else ""),
                      AnswerStatus.ASK_USER, prompt=prompt)
    model, pre, post = split.shares
    who = "The work around it" if split.around_model else "The model itself"
    return Answer(q, f"{who}: {split.line()}",
                  f"{split.basis()} with {split.runtime or 'the original model'}; {split.parts_text()}; "
                  f"rule: {split.rule()}", AnswerStatus.AUTO,
                  value={"around_model": split.around_model, "model_share": round(model, 4),
                         "preprocess_share": round(pre, 4), "postprocess_share": round(post, 4)})


def _cpu_utilization(q: Question, inp: _Inputs) -> Answer:
    busy = facts.number(inp.baseline.get("cpu_utilization_pct"))
    threads = assess_threads(inp.hw, inp.baseline)
    if busy is not None:
        return Answer(q, f"{units.pct(busy / 100)} busy during the baseline run",
                      f"CPU utilization sampled: {units.pct(busy / 100)}; "
                      f"{threads.evidence}", AnswerStatus.AUTO, value={"utilization_pct": busy})
    if threads.intra is None:
        return Answer(q, "Not measured", threads.evidence, AnswerStatus.NOT_MEASURED)
    covers = threads.usable is not None and threads.intra >= min(threads.usable, threads.recommended or threads.usable)
    answer = ("The thread pool covers every core it should" if covers else
              f"No: only {threads.intra} of {threads.recommended} cores get torch threads")
    return Answer(q, answer + " (busy % not sampled)", threads.evidence, AnswerStatus.AUTO,
                  value={"threads_cover_cores": covers})


def _threading(q: Question, inp: _Inputs) -> Answer:
    threads = assess_threads(inp.hw, inp.baseline)
    if facts.onnx_only(inp.baseline):
        return Answer(q, "Set by the runtime, not torch: the model is ONNX only", threads.evidence,
                      AnswerStatus.NOT_MEASURED, value=threads.to_dict())
    if threads.ok is None:
        return Answer(q, "Not recorded", threads.evidence, AnswerStatus.NOT_MEASURED, value=threads.to_dict())
    answer = ("Matches the physical cores" if threads.ok else
              "Mismatch: " + "; ".join(threads.issues))
    return Answer(q, answer, threads.evidence, AnswerStatus.AUTO, value=threads.to_dict())


def _mkldnn(q: Question, inp: _Inputs) -> Answer:
    enabled = facts.info(inp.baseline).get("mkldnn")
    cpu = getattr(inp.hw, "cpu", None)
    who = f"{facts.cpu_vendor(inp.hw) or 'unknown vendor'} {getattr(cpu, 'model', '') or ''}".strip()
    if facts.onnx_only(inp.baseline):
        return Answer(q, "Does not apply: the model is ONNX only",
                      f"{facts.ONNX_ONLY}, and torch.backends.mkldnn is a PyTorch setting; CPU {who}",
                      AnswerStatus.AUTO, value={"applies": False})
    if not isinstance(enabled, bool):
        return Answer(q, "Not recorded", f"the profile has no mkldnn flag; CPU {who}", AnswerStatus.NOT_MEASURED)
    scope = ("" if facts.is_intel(inp.hw) else
             "; the CPU checklist advises MKLDNN for Intel CPUs, and this CPU is not Intel (oneDNN also runs here)")
    return Answer(q, "Yes: oneDNN (MKLDNN) is enabled in torch" if enabled else "No: torch.backends.mkldnn is off",
                  f"torch.backends.mkldnn enabled = {enabled}; CPU {who}{scope}", AnswerStatus.AUTO,
                  value={"enabled": enabled})


def _edge_latency(q: Question, inp: _Inputs) -> Answer:
    p50 = facts.latency(inp.baseline, "p50")
    klass = facts.device_class(inp.hw)
    if p50 is None:
        return Answer(q, "Not measured", "no latency in the profile", AnswerStatus.NOT_MEASURED)
    p95 = facts.latency(inp.baseline, "p95")
    numbers = f"p50 {units.ms(p50)}" + (f", p95 {units.ms(p95)}" if p95 is not None else "")
    if klass not in EDGE_DEVICE_CLASSES:
        return Answer(q, f"Not on the target device: {numbers} was measured on this {klass or 'machine'}",
                      f"{numbers} on a {klass or 'machine of unknown class'}; profile on the device "
                      "itself - run the planner there", AnswerStatus.NOT_MEASURED, value={"p50_ms": p50})
    return Answer(q, numbers, f"{numbers} measured on this {klass}", AnswerStatus.AUTO, value={"p50_ms": p50})


def _edge_memory(q: Question, inp: _Inputs) -> Answer:
    peak = facts.peak_memory(inp.baseline)
    available, total = facts.memory_available(inp.hw), facts.memory_total(inp.hw)
    if peak is None:
        return Answer(q, "Not measured", "no peak memory in the profile", AnswerStatus.NOT_MEASURED)
    if available is None:
        return Answer(q, f"Peak {units.size(peak)}", f"peak {units.size(peak)}; device RAM unknown",
                      AnswerStatus.AUTO, value={"peak_bytes": peak})
    fits = peak < available
    ram = f"{units.size(available)} available" + (f" of {units.size(total)}" if total else "")
    return Answer(q, f"{'Fits' if fits else 'Does not fit'}: peak {units.size(peak)}, {ram}",
                  f"peak {units.size(peak)} ({inp.baseline.get('memory_basis') or 'peak memory'}); {ram}",
                  AnswerStatus.AUTO, value={"peak_bytes": peak, "fits": fits})


def _edge_quantized(q: Question, inp: _Inputs) -> Answer:
    precision = facts.precision(inp.baseline)
    dot = [f for f in ("asimddp", "i8mm", "avx512_vnni", "avx_vnni") if facts.cpu_has(inp.hw, f)]
    hw_text = (f"the CPU has {', '.join(dot)} (int8 dot-product instructions)" if dot else
               "no int8 dot-product instruction reported by the CPU")
    if precision is None:
        return Answer(q, "Not recorded", f"precision not in the profile; {hw_text}", AnswerStatus.NOT_MEASURED)
    quantized = precision in ("int8", "ternary", "binary")
    return Answer(q, f"{'Yes' if quantized else 'No'}: the baseline ran in {precision}",
                  f"baseline precision {precision}; {hw_text}", AnswerStatus.AUTO,
                  value={"quantized": quantized, "int8_dot": bool(dot)})


def _edge_architecture(q: Question, inp: _Inputs) -> Answer:
    p50 = facts.latency(inp.baseline, "p50")
    if p50 is None:
        return Answer(q, "Not measured", "no latency in the profile", AnswerStatus.NOT_MEASURED)
    size, params = facts.model_size(inp.baseline), facts.parameters(inp.baseline)
    model = ", ".join(x for x in (f"{units.count(params)} parameters" if params else "",
                                  units.size(size) if size else "") if x)
    slow = p50 > EDGE_SLOW_MS
    verdict = (f"Likely too large: p50 {units.ms(p50)} > {units.ms(EDGE_SLOW_MS)} per sample" if slow else
               f"Size looks workable: p50 {units.ms(p50)} <= {units.ms(EDGE_SLOW_MS)} per sample")
    return Answer(q, verdict, f"p50 {units.ms(p50)} against the edge decision tree's {units.ms(EDGE_SLOW_MS)} threshold"
                  + (f"; model {model}" if model else ""), AnswerStatus.AUTO, value={"too_slow": slow})


ANSWERERS: Mapping[str, _Answerer] = {
    "gpu.utilization": _gpu_utilization,
    "gpu.memory": _gpu_memory,
    "gpu.slowest_ops": _slowest_ops,
    "gpu.transfers": _gpu_transfers,
    "gpu.batch": _batch,
    "gpu.tensor_cores": _tensor_cores,
    "gpu.preprocessing": _preprocessing,
    "cpu.utilization": _cpu_utilization,
    "cpu.threading": _threading,
    "cpu.slowest_ops": _slowest_ops,
    "cpu.mkldnn": _mkldnn,
    "cpu.batch": _batch,
    "cpu.preprocessing": _preprocessing,
    "edge.latency": _edge_latency,
    "edge.memory": _edge_memory,
    "edge.quantized": _edge_quantized,
    "edge.threading": _threading,
    "edge.architecture": _edge_architecture,
    "edge.preprocessing": _preprocessing,
}


def answer_checklist(target: str, hw: HardwareProfile, baseline: Mapping[str, Any], *,
                     requirements: Requirements | None = None) -> list[Answer]:
    """Answer the target's checklist from the hardware profile and the baseline profile dict.

    `requirements` lets the batch-size question judge batches against the latency target.
    """
    inputs = _Inputs(hw, baseline or {}, requirements)
    return [ANSWERERS[q.id](q, inputs) for q in questions_for(target)]


def answer_from_record(record: AnswerRecord, target: str | None) -> Answer:
    """The `Answer` a results record was made from: its question is the checklist's own (with its replies),
    or, for a question this planner no longer asks, one rebuilt from the record's fields."""
    asked = questions_for(target) if target is not None and target in TARGET_GROUPS else ()
    question = next((q for q in asked if q.id == record.id), None)
    if question is None:
        question = Question(id=record.id, group=record.group, text=record.question, hint=record.hint,
                            answered_by=record.answered_by)
    return Answer(question=question, answer=record.answer, evidence=record.evidence, status=record.status,
                  prompt=record.prompt, value=record.value)
