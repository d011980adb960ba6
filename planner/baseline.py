"""The baseline profile: measured latency, throughput, memory and per-layer analysis of the model
as it runs out of the box, plus roofline verdicts and architecture findings."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from planner.events import Event, EventSink, null_sink
from planner.plugins import CandidateSpec, ModelRef
from planner.results import Status

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel


def baseline_spec_for(model: "LoadedModel", hw: "HardwareProfile") -> CandidateSpec:
    """What 'out of the box' means for this model: torch eager, or ORT defaults for ONNX files."""
    from targets.torch_eager import baseline_spec

    if model.has_torch:
        return baseline_spec(device="cuda" if _cuda_usable(hw) else "cpu")
    return CandidateSpec(plugin="cpu.onnxruntime", label="onnxruntime defaults (ONNX model)",
                         config={"defaults": True}, artifacts={"onnx": str(model.onnx_path)})


def _cuda_usable(hw: "HardwareProfile") -> bool:
    if not hw.gpus:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def profile_baseline(model: "LoadedModel", *, quick: bool = False, hw: "HardwareProfile | None" = None,
                     ceilings=None, on_event: EventSink = null_sink, timeout_s: float = 600.0,
                     keep_outputs: bool = False, val_data=None) -> dict:
    """Measure and analyse the baseline; returns the `planner profile --json` object."""
    from planner.evaluate import MeasureJob, fidelity_batch_count, measure
    from planner.hardware import detect
    from planner.hardware.ceilings import measure_ceilings

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
    job = MeasureJob(model=ModelRef.of(model), spec=spec, quick=quick,
                     sweep_max_batch=4 if quick else 32, memory_budget_bytes=budget,
                     fidelity_batches=fidelity_batch_count(quick),
                     val_data=str(val_data) if val_data else None)
    result, outputs = measure(job, timeout_s=timeout_s)
    if result.status is not Status.OK:
        from planner.errors import PlannerError

        raise PlannerError(f"the baseline could not be measured: {result.reason}",
                           "check that the model runs at this input shape (planner inspect)")
    lat = result.latency_ms
    on_event(Event("stage_done", f"baseline p50 {lat['p50_ms']:.2f} ms over {lat['samples']} samples",
                   stage="baseline"))
    on_event(Event("stage", "analysing layers, roofline and architecture", stage="analysis",
                   index=3, total=4))
    analysis = analyse(model, result.latency_ms["p50_ms"] / 1e3, ceilings, quick=quick)
    data = {
        "model": {"name": model.name, "source": model.source.text, "kind": str(model.source.kind),
                  "parameters": model.parameters, "size_bytes": model.size_bytes},
        "input_shape": list(model.input_spec.shape),
        "output_shape": list(model.output_shape),
        "device": spec.config.get("device", "cpu"),
        "runtime": spec.label,
        "latency_ms": result.latency_ms,
        "stopped_by": result.stopped_by,
        "throughput": result.throughput,
        "knee_batch": result.knee_batch,
        "peak_memory_bytes": result.peak_memory_bytes,
        "memory_basis": result.memory_basis,
        "threads": result.threads,
        "info": result.info,
        "spec": spec.to_dict(),
        "reproduce": result.reproduce,
        "ceilings": ceilings.to_dict(),
        "wall_s": round(time.time() - started, 2),
        "quick": quick,
        **analysis,
    }
    on_event(Event("stage_done", f"{len(data['findings'])} architecture findings", stage="analysis"))
    if keep_outputs:
        data["_reference_outputs"] = outputs
    return data


def analyse(model: "LoadedModel", latency_s: float, ceilings, *, quick: bool) -> dict:
    """Per-layer FLOPs/bytes/time, roofline verdicts, bottleneck classes and lint findings."""
    if not model.has_torch:
        return {"flops_per_sample": None, "layers": [], "findings": [],
                "bottleneck": {"bound": None, "explanation":
                               "not analysed: the model is ONNX only (no PyTorch module)"},
                "bottleneck_classes": {}, "analysis_notes": ["ONNX-only model: no per-layer analysis"]}
    import torch

    from planner.analysis import analyze_layers, classify_bottlenecks, layer_verdicts, lint, model_verdict

    x = torch.from_numpy(model.make_inputs(count=1, seed=3)[0])
    report = analyze_layers(model.module, x, measure_time=True, repeats=3 if quick else 10)
    findings = lint(model.module, x, report)
    verdict = model_verdict(report, latency_s, ceilings)
    verdicts = layer_verdicts(report, ceilings)
    batch = model.input_spec.batch
    return {
        "flops_per_sample": int(report.total_flops / batch) if batch else report.total_flops,
        "flops_basis": "FlopCounterMode, 2 FLOPs per multiply-add",
        "layers": [layer.to_dict() for layer in report.layers],
        "layer_time_method": report.time_method,
        "peak_activation_bytes": report.peak_activation_bytes,
        "findings": [f.to_dict() for f in findings],
        "bottleneck": verdict.to_dict(),
        "layer_verdicts": {v.layer.key: v.verdict.to_dict() for v in verdicts},
        "bottleneck_classes": classify_bottlenecks(report, ceilings).to_dict(),
    }


def format_baseline(b: dict) -> str:
    """A readable profile in the shape of seed 002's 'overall performance profile'."""
    lat = b["latency_ms"]
    m = b["model"]
    lines = [f"Baseline profile: {m['source']} ({m['parameters']:,} parameters, "
             f"{m['size_bytes'] / 2**20:.1f} MiB), input {'x'.join(map(str, b['input_shape']))}, "
             f"{b['runtime']}", ""]
    pct = [f"p{q} {lat[f'p{q}_ms']:.2f} ms" for q in (95, 99) if lat.get(f"p{q}_ms") is not None]
    missing = [f"p{q}" for q in (90, 95, 99) if lat.get(f"p{q}_ms") is None]
    lines.append(f"Latency      p50 {lat['p50_ms']:.2f} ms" + (", " + ", ".join(pct) if pct else "")
                 + f"; mean {lat['mean_ms']:.2f} ± {lat['std_ms']:.2f} ms; {lat['samples']} samples"
                 + (f" ({', '.join(missing)} need more samples)" if missing else ""))
    if lat.get("unstable"):
        lines.append(f"             UNSTABLE: IQR/median {lat['iqr_over_median']:.0%} > 10%; "
                     "close other programs and re-run")
    if b["throughput"]:
        best = max(b["throughput"], key=lambda p: p["samples_per_s"])
        pts = ", ".join(f"b{p['batch']} {p['samples_per_s']:.1f}/s" for p in b["throughput"])
        lines.append(f"Throughput   {pts}")
        lines.append(f"             best {best['samples_per_s']:.1f} samples/s at batch {best['batch']}"
                     + (f"; knee at batch {b['knee_batch']}" if b.get("knee_batch") else ""))
    if b.get("flops_per_sample"):
        gflops = b["flops_per_sample"] / 1e9
        achieved = b["flops_per_sample"] / (lat["p50_ms"] / 1e3) / 1e9
        lines.append(f"Compute      {gflops:.2f} GFLOPs per sample (2 per MAC); "
                     f"{achieved:.1f} GFLOP/s achieved at batch 1")
    mem = b.get("peak_memory_bytes")
    lines.append(f"Memory       peak {mem / 2**20:.0f} MiB ({b['memory_basis']}); weights "
                 f"{m['size_bytes'] / 2**20:.1f} MiB" if mem else "Memory       not measured")
    if b.get("peak_activation_bytes"):
        lines[-1] += f"; largest activation {b['peak_activation_bytes'] / 2**20:.1f} MiB"
    c = b["ceilings"]
    peak = c["peak_flops"].get("fp32")
    lines.append(f"Ceilings     fp32 {peak / 1e9:.1f} GFLOP/s, {c['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s "
                 f"({c['source']})" if peak else f"Ceilings     {c['source']}")
    bn = b.get("bottleneck") or {}
    if bn.get("bound"):
        lines.append(f"Bottleneck   {bn['bound']}-bound: {bn.get('explanation', '')}")
    threads = b.get("threads", {})
    if threads:
        lines.append("Threads      " + ", ".join(f"{k}={v}" for k, v in threads.items() if v is not None))
    layers = sorted((x for x in b["layers"] if x.get("time_ms") is not None),
                    key=lambda x: x["time_ms"], reverse=True)[:5]
    if layers:
        lines += ["", "Top layers by time:"]
        for x in layers:
            verdict = (b.get("layer_verdicts") or {}).get(x["key"], {}).get("bound", "")
            lines.append(f"  {x['key']:<18} {x['type']:<18} {x['time_ms']:7.2f} ms "
                         f"{(x.get('time_share') or 0):6.1%}  {x['flops'] / 1e9:6.2f} GFLOPs  "
                         f"AI {x['intensity']:6.1f}  {verdict}")
    if b["findings"]:
        lines += ["", "Architecture findings (ranked by impact):"]
        for i, f in enumerate(b["findings"][:8], 1):
            lines.append(f"  {i}. [{f['severity']}] {f['title']} — {f['impact']:.0%} "
                         f"{f['impact_basis']}; layers: {', '.join(f['layers'][:5])}"
                         + (" …" if len(f['layers']) > 5 else ""))
            lines.append(f"     {f['advice']}")
    lines.append(f"\nMeasured in {b['wall_s']:.0f} s; reproduce: {b['reproduce']}")
    return "\n".join(lines)
