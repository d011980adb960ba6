"""The baseline profile: measured latency, throughput, memory and per-layer analysis of the model
as it runs out of the box, plus roofline verdicts and architecture findings."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner import units
from planner.errors import PlannerError
from planner.events import Event, EventSink, null_sink
from planner.hardware.ceiling_notes import EXCEEDED_WARNING, measurement_note
from planner.plugins import CandidateSpec, ModelRef, cuda_usable
from planner.results import Baseline, CandidateResult, Declared, Status, from_data, to_data

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.ceilings import Ceilings
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel


def baseline_spec_for(model: "LoadedModel", hw: "HardwareProfile") -> CandidateSpec:
    """What 'out of the box' means for this model: the first plugin that offers a baseline for it.

    The plugins declared as the baseline are asked first (PyTorch eager for a model with a module),
    then the rest (an ONNX-only model's runtime defaults).
    """
    from planner.plugins import discover

    plugins, _ = discover()
    for plugin in sorted(plugins.values(), key=lambda p: (not p.is_baseline, p.name)):
        spec = plugin.baseline_spec(model, hw)
        if spec is not None:
            return spec
    raise PlannerError(f"no installed plugin runs {model.name} out of the box, so there is no baseline to "
                       "compare against", "reinstall the planner with its built-in plugins (pip install -e .)")


def baseline_declared(spec: CandidateSpec, model: "LoadedModel") -> Declared | None:
    """What the baseline's plugin says of it: its runtime, plain title and apply snippet, in no roadmap phase (0)
    since it is what every phase is measured against; None where the plugin is not loaded."""
    from planner.plugins import description_of, discover

    plugin = discover()[0].get(spec.plugin)
    if plugin is None:
        return None
    said = description_of(plugin, spec, model.inputs)
    return Declared(phase=0, runtime=plugin.declaration().runtime, is_baseline=True, title=said.title,
                    apply=said.apply)


def profile_baseline(model: "LoadedModel", *, quick: bool = False, hw: "HardwareProfile | None" = None,
                     ceilings: "Ceilings | None" = None, on_event: EventSink = null_sink, timeout_s: float = 600.0,
                     val_data: Path | None = None) -> tuple[Baseline, list[np.ndarray] | None]:
    """Measure and analyse the baseline; returns it and its outputs (the reference for fidelity)."""
    from planner.hardware import detect
    from planner.hardware.ceilings import measure_ceilings
    from planner.measure.energy import prepare_source
    from planner.measure.evaluate import MeasureJob, fidelity_batch_count, measure
    from planner.models.footprint import check_fits, sweep_footprint
    from planner.results.energy_view import energy_line

    started = time.time()
    on_event(Event("stage", "detecting hardware", stage="hardware", index=0, total=4))
    hw = hw or detect()
    if ceilings is None:
        on_event(Event("stage", "measuring ceilings (peak FLOP/s, bandwidth)", stage="ceilings",
                       index=1, total=4))
        ceilings = measure_ceilings(hw, quick=quick)
    spec = baseline_spec_for(model, hw)
    on_event(Event("stage", f"timing the baseline: {spec.label}", stage="baseline", index=2, total=4))
    budget = int(hw.memory.available_bytes * 0.5) if hw.memory.available_bytes else None
    # Loading skips the activation trace for small inputs; the sweep and the GPU check need it.
    footprint = sweep_footprint(model.footprint, model.inputs, model.module if model.has_torch else None)
    if spec.config.get("device") == "cuda" and hw.gpus:
        check_fits(footprint, hw.gpus[0].memory_free_bytes, where="free on the GPU", inputs=model.inputs)
    # Idle power first, with nothing of the planner's running: every energy figure is net of it.
    energy = prepare_source(str(spec.config.get("device") or "cpu"), quick=quick)
    on_event(Event("log", energy_line(energy)))
    job = MeasureJob(model=ModelRef.of(model), spec=spec, quick=quick,
                     sweep_max_batch=4 if quick else 32, memory_budget_bytes=budget, footprint=footprint,
                     fidelity_batches=fidelity_batch_count(quick), weights_bytes=model.size_bytes,
                     val_data=str(val_data) if val_data else None,
                     sequence_sweep=model.inputs.sequence is not None,
                     streams=False,  # the Baseline records no streams; its sweep is its throughput
                     energy=energy)
    result, outputs = measure(job, timeout_s=timeout_s)
    batch = model.inputs.first.shape[0] if model.inputs.first.shape else 1
    invalid = sweep_disagreement(result, batch)
    if invalid:
        # Once more: a busy spell that fell on one of the two timings passes; one that persists is named.
        on_event(Event("warning", f"the baseline's timing disagrees with itself ({invalid}); timing it again"))
        result, outputs = measure(job, timeout_s=timeout_s)
        invalid = sweep_disagreement(result, batch)
    lat = result.latency_ms
    if result.status is not Status.OK or lat is None:
        raise PlannerError(f"the baseline could not be measured: {result.reason}",
                           "check that the model runs at this input shape (planner inspect)")
    if invalid:
        invalid = f"{invalid}, twice; {load_cause(result)}"
        on_event(Event("warning", f"the baseline's timing is invalid: {invalid}; no speedup is worked out against "
                                  "it"))
    on_event(Event("stage_done", f"baseline p50 {units.ms(lat.p50_ms)} over {lat.samples} samples",
                   stage="baseline"))
    on_event(Event("stage", "analysing layers, roofline and architecture", stage="analysis",
                   index=3, total=4))
    from planner.results.audit import flag_line

    analysis = analyse(model, lat.p50_ms / 1e3, ceilings, quick=quick, stats=lat, hw=hw,
                       interference=flag_line(result.audit) or None)
    baseline = from_data({
        "model": {"name": model.name, "source": model.source.text, "kind": str(model.source.kind),
                  "parameters": model.parameters, "size_bytes": model.size_bytes},
        "input_shape": list(model.inputs.first.shape),
        "inputs": [{**to_data(t), "values": t.value_rule()} for t in model.inputs.tensors],
        "sequence_sweep": to_data(result.sequence_sweep),
        "output_shape": list(model.output_shape),
        "device": spec.config.get("device", "cpu"),
        "runtime": spec.label,
        "stopped_by": result.stopped_by,
        "knee_batch": result.knee_batch,
        "peak_memory_bytes": result.peak_memory_bytes,
        "memory_basis": result.memory_basis,
        "threads": result.threads,
        "info": result.info,
        "spec": to_data(spec),
        "reproduce": result.reproduce,
        "ceilings": to_data(ceilings),
        "wall_s": round(time.time() - started, 2),
        "quick": quick,
        "latency_ms": to_data(lat),
        "throughput": to_data(result.throughput),
        "audit": to_data(result.audit),
        "energy_source": to_data(energy),
        "energy": to_data(result.energy),
        "invalid": invalid,
        "declared": to_data(baseline_declared(spec, model)),
        **analysis,
    }, Baseline)
    on_event(Event("stage_done", f"{len(baseline.findings)} architecture findings", stage="analysis"))
    return baseline, outputs


DISAGREEMENT = 2.0
"""How far a baseline's median may sit from its own batch sweep's median at the same batch before it is timed again."""


def sweep_disagreement(result: CandidateResult, batch: int) -> str:
    """'' when the median agrees with the batch sweep's at `batch`, the batch the main timing ran (within
    DISAGREEMENT x), else the two figures in words: the same configuration timed twice in one profile cannot differ
    that much unless other work or the thread count got in the way of one of them."""
    lat = result.latency_ms
    point = next((p for p in result.throughput if p.batch == batch and p.latency_p50_ms > 0), None)
    if lat is None or point is None or lat.p50_ms <= 0:
        return ""
    ratio = max(lat.p50_ms, point.latency_p50_ms) / min(lat.p50_ms, point.latency_p50_ms)
    if ratio <= DISAGREEMENT:
        return ""
    return (f"p50 {units.ms(lat.p50_ms)} over {lat.samples} samples against {units.ms(point.latency_p50_ms)} in the "
            f"batch sweep at batch {point.batch}, {ratio:.0f}x apart")


def load_cause(result: CandidateResult) -> str:
    """The likeliest cause of a timing that disagrees with itself, from what the audit saw."""
    audit = result.audit
    threads = audit.threads_used if audit is not None else None
    busy = audit.other_load_mean_cores if audit is not None else None
    cores = audit.usable_cores if audit is not None else None
    if threads and busy is not None and cores and threads > cores - busy:
        return (f"it ran {threads} threads while other work held {busy:.1f} of the {cores} usable cores: threads that "
                "outnumber the free cores wait on each other at every operation. Re-run on an idle machine, or "
                "stop the other work")
    if busy:
        return f"other work used {busy:.1f} cores while it was timed. Re-run on an idle machine"
    return "nothing else was seen running: re-run it, and report it if it stays"


def analyse(model: "LoadedModel", latency_s: float, ceilings: "Ceilings", *, quick: bool,
            stats: Any = None, hw: "HardwareProfile | None" = None,
            interference: str | None = None) -> dict[str, Any]:
    """Per-layer FLOPs/bytes/time, roofline verdicts, bottleneck classes and lint findings.

    A model or layer that beat the peak FLOP/s raises the ceiling to what it attained (and, given
    `hw`, invalidates the cached ceilings); the raised ceilings are returned under "ceilings".
    `stats` (the latency's LatencyStats) marks verdicts unstable when the samples cannot carry them, and
    `interference` (the measurement audit's flag) when other work disturbed the timing.
    """
    if not model.has_torch:
        return {"flops_per_sample": None, "layers": [], "findings": [],
                "bottleneck": {"bound": None, "explanation":
                               "not analysed: the model is ONNX only (no PyTorch module)"},
                "bottleneck_classes": {}, "analysis_notes": ["ONNX-only model: no per-layer analysis"]}
    from planner.analysis import (
        advice_target,
        analyze_layers,
        classify_bottlenecks,
        layer_verdicts,
        lint,
        model_verdict,
        overhead_bound,
        ranked,
    )
    from planner.analysis.roofline import measurement_instability

    args = model.torch_args(seed=3)
    report = analyze_layers(model.module, args, measure_time=True, repeats=3 if quick else 10,
                            hooks=model.hooks_work)
    target = advice_target(hw, "cuda" if hw is not None and cuda_usable(hw) else "cpu")
    findings = lint(model.module, args, report, target=target) if model.hooks_work else []
    raised = _raise_exceeded_ceilings(model.name, report, latency_s, ceilings, hw)
    verdict = model_verdict(report, latency_s, raised, stats=stats, interference=interference)
    if raised is not ceilings:
        verdict = dataclasses.replace(verdict, ceiling_warning=EXCEEDED_WARNING,
                                      explanation=f"{verdict.explanation} ({EXCEEDED_WARNING})")
    unstable = "; ".join(r for r in (measurement_instability(stats), interference) if r) or None
    verdicts = layer_verdicts(report, raised, unstable_reason=unstable)
    # A whole model held back by per-call overhead gets a finding that says what removes it here.
    overhead = overhead_bound(verdict.record(), report, target)
    if overhead is not None:
        findings = ranked([overhead, *findings])
    batch = model.inputs.batch
    return {
        "flops_per_sample": int(report.total_flops / batch) if batch else report.total_flops,
        "flops_basis": "FlopCounterMode, 2 FLOPs per multiply-add",
        "layers": to_data([layer.record() for layer in report.layers]),
        "layer_time_method": report.time_method,
        "peak_activation_bytes": report.peak_activation_bytes,
        "findings": [to_data(f) for f in findings],
        "bottleneck": to_data(verdict.record()),
        "layer_verdicts": {v.layer.key: to_data(v.verdict.record()) for v in verdicts},
        "bottleneck_classes": to_data(classify_bottlenecks(report, raised, unstable_reason=unstable).record()),
        "analysis_notes": list(report.notes) + ([measurement_note(raised.details)] if raised is not ceilings else []),
        **({"ceilings": to_data(raised)} if raised is not ceilings else {}),
    }


def _raise_exceeded_ceilings(name: str, report: Any, latency_s: float, ceilings: "Ceilings",
                             hw: "HardwareProfile | None") -> "Ceilings":
    """The ceilings, with fp32 raised to the best rate the model or one of its layers attained above it."""
    from planner.hardware.ceilings import raise_exceeded

    best = (report.total_flops / latency_s, f"the whole model ({name})") if latency_s > 0 else (0.0, "")
    for layer in report.layers:
        if layer.time_ms and layer.flops and layer.flops / (layer.time_ms / 1e3) > best[0]:
            best = (layer.flops / (layer.time_ms / 1e3), f"layer {layer.key} of {name}")
    if not ceilings.has("fp32") or best[0] <= ceilings.peak("fp32"):
        return ceilings
    return raise_exceeded(ceilings, {"fp32": best}, hw=hw)
