"""The method end to end: detect → load → baseline → checklist → plan → candidates → measure →
rank → results.json and report. The CLI and the TUI both drive this through events."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from planner import __version__
from planner.errors import OutputDirError, PlannerError
from planner.events import CancelToken, Event, EventSink, null_sink
from planner.results import SCHEMA_VERSION, CandidateResult, Status


@dataclass(frozen=True)
class PlanOptions:
    """What `planner plan` was asked to do."""

    model: str
    input_shape: str | None = None
    trust_code: bool = False
    target: str = "auto"
    quick: bool = False
    out: Path | None = None
    requirements_file: Path | None = None
    requirement_overrides: dict = field(default_factory=dict)
    val_data: Path | None = None
    plugins: tuple[str, ...] = ()
    timeout_s: float = 300.0
    write_report: bool = True


@dataclass
class PlanOutcome:
    """What a plan produced: the results object and where it was written."""

    results: dict
    out_dir: Path
    report_path: Path | None = None


def resolve_target(requested: str, hw) -> str:
    """`auto` → nvidia where CUDA runs, edge on ARM boards, else cpu."""
    if requested != "auto":
        return requested
    from planner.baseline import _cuda_usable

    if _cuda_usable(hw):
        return "nvidia"
    if str(hw.device_class) in ("raspberry_pi", "arm_board", "jetson"):
        return "edge"
    return "cpu"


def default_out_dir(model_name: str, target: str, *, root: Path = Path("reports")) -> Path:
    """reports/<date>-<model>-<target>, with a counter if it already exists."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_name)
    base = root / f"{dt.date.today().isoformat()}-{safe}-{target}"
    path, n = base, 2
    while path.exists() and any(path.iterdir()):
        path = Path(f"{base}-{n}")
        n += 1
    return path


def prepare_out_dir(path: Path) -> Path:
    """Create the output folder and prove it is writable, before any measuring starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-", delete=True):
            pass
    except OSError as exc:
        raise OutputDirError(f"cannot write to output folder {path}: {exc.strerror or exc}",
                             "pass --out with a folder you can write to") from exc
    return path


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON through a temporary file and rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def environment() -> dict:
    """Versions and settings that affect the numbers."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("torch", "torchvision", "onnx", "onnxruntime", "openvino", "tensorrt", "numpy"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {"planner": __version__, "python": platform.python_version(),
            "platform": platform.platform(), "packages": versions,
            "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                   "CUDA_VISIBLE_DEVICES") if os.environ.get(k)},
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds")}


def run_plan(options: PlanOptions, *, on_event: EventSink = null_sink,
             cancel: CancelToken | None = None) -> PlanOutcome:
    """Run the whole method; Ctrl-C or cancel stops cleanly and keeps what was measured."""
    from planner.advice import answer_checklist, evaluate_tree, load_requirements, make_plan
    from planner.hardware import detect
    from planner.hardware.ceilings import measure_ceilings
    from planner.models import load_model

    cancel = cancel or CancelToken()
    model = load_model(options.model, input_shape=options.input_shape, trust_code=options.trust_code)
    hw = detect()
    target = resolve_target(options.target, hw)
    out_dir = prepare_out_dir(options.out or default_out_dir(model.name, target))
    requirements = load_requirements(device_class=str(hw.device_class),
                                     toml_path=options.requirements_file,
                                     overrides=options.requirement_overrides)
    results: dict = {
        "schema_version": SCHEMA_VERSION, "status": "running", "planner_version": __version__,
        "target": target, "quick": options.quick,
        "model": model.describe(), "hardware": hw.to_dict(), "requirements": requirements.to_dict(),
        "environment": environment(), "candidates": [], "warnings": [], "skipped_plugins": [],
    }
    results_path = out_dir / "results.json"
    outcome = PlanOutcome(results, out_dir)
    try:
        on_event(Event("stage", "measuring ceilings", stage="ceilings", index=0, total=5))
        ceilings = measure_ceilings(hw, quick=options.quick)
        baseline = _run_baseline(model, hw, ceilings, options, on_event)
        reference = baseline.pop("_reference_outputs")
        results["baseline"] = baseline
        results["ceilings"] = baseline["ceilings"]
        write_json_atomic(results_path, results)
        on_event(Event("stage", "checklist and decision tree", stage="decide", index=2, total=5))
        answers = answer_checklist(target, hw, {**baseline, "target": target})
        path = evaluate_tree(target, hw, {**baseline, "target": target}, requirements, answers)
        plan = make_plan(target=target, hw=hw, baseline={**baseline, "target": target},
                         requirements=requirements, answers=answers)
        results["checklist"] = [a.to_dict() for a in answers]
        results["decision_path"] = path.to_dict()
        results["plan"] = plan.to_dict()
        baseline_result = _baseline_as_candidate(baseline)
        results["candidates"].append(baseline_result.to_dict())
        write_json_atomic(results_path, results)
        _run_candidates(model, hw, plan, options, target, reference, baseline_result, results,
                        results_path, on_event, cancel, out_dir)
        results["status"] = "interrupted" if cancel.cancelled else _overall_status(results)
    except KeyboardInterrupt:
        results["status"] = "interrupted"
        results["warnings"].append("interrupted by Ctrl-C: the results hold what was measured")
        _finish(results, results_path, outcome, options, on_event, requirements)
        raise
    except PlannerError:
        raise
    except Exception as exc:  # noqa: BLE001 - keep what was measured, then surface the error
        results["status"] = "failed"
        results["warnings"].append(f"plan stopped: {type(exc).__name__}: {exc}")
        _finish(results, results_path, outcome, options, on_event, requirements)
        raise
    _finish(results, results_path, outcome, options, on_event, requirements)
    return outcome


def _finish(results: dict, results_path: Path, outcome: PlanOutcome, options: PlanOptions,
            on_event: EventSink, requirements) -> None:
    from planner.ranking import rank_candidates

    if "baseline" in results:
        rank_candidates(results)
        results["requirement_checks"] = requirement_checks(results, requirements)
    results["finished"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    write_json_atomic(results_path, results)
    if options.write_report and "baseline" in results:
        try:
            from planner.report import render_report_files

            outcome.report_path = render_report_files(results, results_path.parent)
        except ImportError:
            pass  # the report module is optional until it lands
        except Exception as exc:  # noqa: BLE001 - a report failure must not lose results.json
            results["warnings"].append(f"report not written: {type(exc).__name__}: {exc}")
            write_json_atomic(results_path, results)
            on_event(Event("warning", f"report not written: {exc}"))


def requirement_checks(results: dict, requirements) -> dict:
    """Each requirement checked against the baseline and against the best ranked candidate."""
    from planner.advice import all_met, evaluate

    peak = (results.get("ceilings") or {}).get("peak_flops", {}).get("fp32")
    out = {}
    subjects = {"baseline": results["candidates"][0] if results["candidates"] else None}
    if results.get("best") is not None:
        subjects["best"] = results["candidates"][results["best"]]
    for name, cand in subjects.items():
        if cand is None:
            continue
        measured = {**cand, "model": results.get("model", {}),
                    "flops_per_sample": (results.get("baseline") or {}).get("flops_per_sample")}
        checks = evaluate(requirements, measured, peak_flops_per_s=peak)
        out[name] = {"label": cand["label"], "met": all_met(checks),
                     "checks": [c.to_dict() for c in checks]}
    return out


def _run_baseline(model, hw, ceilings, options: PlanOptions, on_event: EventSink) -> dict:
    from planner.baseline import profile_baseline

    return profile_baseline(model, quick=options.quick, hw=hw, ceilings=ceilings,
                            on_event=on_event, keep_outputs=True, timeout_s=options.timeout_s * 2)


def _baseline_as_candidate(baseline: dict) -> CandidateResult:
    return CandidateResult(
        plugin=baseline["spec"]["plugin"], label=baseline["runtime"], config=baseline["spec"]["config"],
        precision=baseline["spec"]["precision"], status=Status.OK, latency_ms=baseline["latency_ms"],
        throughput=baseline["throughput"], knee_batch=baseline["knee_batch"],
        peak_memory_bytes=baseline["peak_memory_bytes"], memory_basis=baseline["memory_basis"],
        size_bytes=baseline["model"]["size_bytes"],
        fidelity={"cosine": 1.0, "max_abs_error": 0.0, "mean_abs_error": 0.0, "top1_agreement": 1.0,
                  "samples": 0, "reference": True},
        speedup=1.0, reproduce=baseline["reproduce"], info=baseline["info"],
        threads=baseline["threads"], spec=baseline["spec"], stopped_by=baseline.get("stopped_by", ""))


def _select_plugins(plan, options: PlanOptions, target: str) -> list[str]:
    wanted = [s["plugin"] if isinstance(s, dict) else s.plugin for s in plan.steps]
    names = [n for n in dict.fromkeys(wanted) if n and n != "torch.eager"]
    if options.plugins:
        names = list(options.plugins)
    return names


def _run_candidates(model, hw, plan, options: PlanOptions, target: str, reference, baseline_result,
                    results: dict, results_path: Path, on_event: EventSink, cancel: CancelToken,
                    out_dir: Path) -> None:
    from planner.evaluate import MeasureJob, fidelity_batch_count, measure
    from planner.fidelity import DEFAULT_GATES, compare
    from planner.plugins import ModelRef, PlanContext, Precision, discover

    plugins, issues = discover()
    for issue in issues:
        results["warnings"].append(f"plugin {issue.name}: {issue.reason}")
        on_event(Event("warning", f"plugin {issue.name}: {issue.reason}"))
    workdir = out_dir / "artifacts"
    workdir.mkdir(exist_ok=True)
    ctx = PlanContext(hw=hw, model=model, workdir=workdir, quick=options.quick, cancel=cancel,
                      log=lambda msg: on_event(Event("log", msg)))
    specs = []
    for name in _select_plugins(plan, options, target):
        plugin = plugins.get(name)
        if plugin is None:
            reason = next((i.reason for i in issues if i.name == name), "not installed or not registered")
            results["skipped_plugins"].append({"plugin": name, "reasons": [reason]})
            continue
        reasons = plugin.check(hw, model)
        if reasons:
            results["skipped_plugins"].append({"plugin": name, "reasons": reasons})
            on_event(Event("log", f"skipping {name}: {'; '.join(reasons)}"))
            continue
        on_event(Event("stage", f"building candidates: {name}", stage="candidates", index=3, total=5))
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
    ref = ModelRef.of(model)
    base_p50 = baseline_result.latency_ms["p50_ms"]
    for i, spec in enumerate(specs):
        if cancel.cancelled:
            results["warnings"].append(f"cancelled: {len(specs) - i} candidates not measured")
            return
        on_event(Event("candidate", f"measuring {spec.label}", stage="measure", index=i,
                       total=len(specs), data={"plugin": spec.plugin}))
        job = MeasureJob(model=ref, spec=spec, quick=options.quick,
                         sweep_max_batch=0 if options.quick else 16,
                         fidelity_batches=fidelity_batch_count(options.quick),
                         val_data=str(options.val_data) if options.val_data else None,
                         env=dict(spec.config.get("env", {})))
        result, outputs = measure(job, timeout_s=options.timeout_s)
        if result.status is Status.OK and outputs is not None:
            try:
                fid = compare(reference, outputs)
                result.fidelity = fid.to_dict()
                gate = DEFAULT_GATES[Precision(result.precision)]
                why = gate.check(fid)
                if why:
                    result.status, result.reason = Status.REJECTED, f"fidelity gate: {why}"
            except ValueError as exc:
                result.status, result.reason = Status.REJECTED, f"outputs differ in shape: {exc}"
            result.speedup = base_p50 / result.p50 if result.p50 else None
        results["candidates"].append(result.to_dict())
        write_json_atomic(results_path, results)
        on_event(Event("candidate_done", _candidate_line(result), stage="measure", index=i + 1,
                       total=len(specs), data=result.to_dict()))


def _candidate_line(r: CandidateResult) -> str:
    if r.status in (Status.OK, Status.REJECTED) and r.p50:
        tail = f" — {r.reason}" if r.status is Status.REJECTED else ""
        return f"  {r.status}: {r.label}: p50 {r.p50:.2f} ms ({r.speedup:.2f}x){tail}"
    return f"  {r.status}: {r.label}: {r.reason}"


def _overall_status(results: dict) -> str:
    statuses = [c["status"] for c in results["candidates"]]
    if any(s == "failed" for s in statuses):
        return "partial"
    return "ok"
