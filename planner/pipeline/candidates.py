"""The candidates step: build specs from the chosen plugins, measure each in a worker, gate on
fidelity. One plugin's failure is recorded and the rest go on."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from planner.events import Event
from planner.results import CandidateResult, Status

if TYPE_CHECKING:
    from planner.pipeline.session import PlanSession


def run_candidates(session: "PlanSession", names: list[str], *, timeout_s: float,
                    val_data: Path | None) -> None:
    from planner.measure.evaluate import MeasureJob, fidelity_batch_count, measure
    from planner.measure.fidelity import DEFAULT_GATES, compare
    from planner.plugins import ModelRef, PlanContext, Precision, discover

    results, on_event, cancel = session.results, session.on_event, session.cancel
    plugins, issues = discover()
    for issue in issues:
        results["warnings"].append(f"plugin {issue.name}: {issue.reason}")
        on_event(Event("warning", f"plugin {issue.name}: {issue.reason}"))
    if session.out_dir is None:
        session.set_out_dir(None)
    workdir = session.out_dir / "artifacts"
    workdir.mkdir(exist_ok=True)
    ctx = PlanContext(hw=session.hw, model=session.model, workdir=workdir, quick=session.quick,
                      cancel=cancel, log=lambda msg: on_event(Event("log", msg)))
    specs = []
    for name in names:
        plugin = plugins.get(name)
        if plugin is None:
            reason = next((i.reason for i in issues if i.name == name), "not installed or not registered")
            results["skipped_plugins"].append({"plugin": name, "reasons": [reason]})
            continue
        reasons = plugin.check(session.hw, session.model)
        if reasons:
            results["skipped_plugins"].append({"plugin": name, "reasons": reasons})
            on_event(Event("log", f"skipping {name}: {'; '.join(reasons)}"))
            continue
        on_event(Event("stage", f"building candidates: {name}", stage="candidates"))
        try:
            specs.extend(plugin.candidates(ctx))
        except Exception as exc:  # noqa: BLE001 - one plugin's failure never ends the plan
            reason = f"{type(exc).__name__}: {exc}"
            results["candidates"].append(CandidateResult(
                plugin=name, label=f"{name} (no candidates)", config={}, precision="fp32",
                status=Status.FAILED, reason=f"building candidates failed: {reason}").to_dict())
            on_event(Event("warning", f"{name}: building candidates failed: {reason}"))
        if cancel.cancelled:
            return
    from planner.measure.valdata import labels_of

    labels = labels_of(val_data)
    if val_data is not None:
        results["validation"] = {"folder": str(val_data), "labels": labels is not None,
                                 "samples": int(sum(len(b) for b in session.reference))}
        if labels is not None and results["candidates"]:
            own = compare(session.reference, session.reference, labels=labels)
            results["candidates"][0]["fidelity"]["accuracy"] = own.accuracy
            results["validation"]["baseline_accuracy"] = own.accuracy
    budget = getattr(session.requirements, "accuracy_budget", None)
    ref = ModelRef.of(session.model)
    base_p50 = session.baseline["latency_ms"]["p50_ms"]
    for i, spec in enumerate(specs):
        if cancel.cancelled:
            results["warnings"].append(f"cancelled: {len(specs) - i} candidates not measured")
            return
        on_event(Event("candidate", f"measuring {spec.label}", stage="measure", index=i,
                       total=len(specs), data={"plugin": spec.plugin}))
        job = MeasureJob(model=ref, spec=spec, quick=session.quick,
                         sweep_max_batch=0 if session.quick else 8,
                         fidelity_batches=fidelity_batch_count(session.quick),
                         val_data=str(val_data) if val_data else None,
                         env=dict(spec.config.get("env", {})))
        result, outputs = measure(job, timeout_s=timeout_s)
        if result.status is Status.OK and outputs is not None:
            try:
                fid = compare(session.reference, outputs, labels=labels)
                result.fidelity = fid.to_dict()
                gate = DEFAULT_GATES[Precision(result.precision)]
                if budget is not None:
                    gate = dataclasses.replace(gate, max_accuracy_drop=budget)
                why = gate.check(fid)
                if why:
                    result.status, result.reason = Status.REJECTED, f"fidelity gate: {why}"
            except ValueError as exc:
                result.status, result.reason = Status.REJECTED, f"outputs differ in shape: {exc}"
            result.speedup = base_p50 / result.p50 if result.p50 else None
        results["candidates"].append(result.to_dict())
        session.save()
        on_event(Event("candidate_done", candidate_line(result), stage="measure", index=i + 1,
                       total=len(specs), data=result.to_dict()))


def candidate_line(r: CandidateResult) -> str:
    if r.status in (Status.OK, Status.REJECTED) and r.p50:
        tail = f" — {r.reason}" if r.status is Status.REJECTED else ""
        return f"  {r.status}: {r.label}: p50 {r.p50:.2f} ms ({r.speedup:.2f}x){tail}"
    return f"  {r.status}: {r.label}: {r.reason}"
