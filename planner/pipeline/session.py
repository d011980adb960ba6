"""The method as steps on one session: detect → load → baseline → checklist → plan → candidates →
measure → rank → results.json and report. The TUI walks the steps; `run_plan` runs them in one go."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from planner import __version__
from planner.errors import PlannerError
from planner.events import CancelToken, Event, EventSink, null_sink
from planner.io import write_json_atomic
from planner.pipeline.environment import environment
from planner.pipeline.outdir import default_out_dir, prepare_out_dir
from planner.results import SCHEMA_VERSION, CandidateResult, Status


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
    from planner.pipeline.baseline import _cuda_usable

    if _cuda_usable(hw):
        return "nvidia"
    if str(hw.device_class) in ("raspberry_pi", "arm_board", "jetson"):
        return "edge"
    return "cpu"


class PlanSession:
    """The method as steps: the TUI walks them one screen at a time, `run_plan` in one go.

    Each step stores its result on the session and in `results` (the results.json object),
    which is written to `out_dir` after every measured candidate once an output folder is set.
    """

    def __init__(self, *, on_event: EventSink = null_sink, cancel: CancelToken | None = None) -> None:
        self.on_event = on_event
        self.cancel = cancel or CancelToken()
        self.hw = None
        self.ceilings = None
        self.model = None
        self.target: str | None = None
        self.requirements = None
        self.baseline: dict | None = None
        self.reference = None
        self.answers: list = []
        self.path = None
        self.plan = None
        self.out_dir: Path | None = None
        self.quick = False
        self.val_data: Path | None = None
        self.results: dict = {"schema_version": SCHEMA_VERSION, "status": "running",
                              "planner_version": __version__, "environment": environment(),
                              "candidates": [], "warnings": [], "skipped_plugins": []}

    # -- steps -------------------------------------------------------------------------------
    def detect(self):
        """Detect the hardware (once)."""
        from planner.hardware import detect

        if self.hw is None:
            self.hw = detect()
            self.results["hardware"] = self.hw.to_dict()
        return self.hw

    def measure_ceilings(self, *, quick: bool = False):
        """Measure (or read the cached) roofline ceilings of this machine."""
        from planner.hardware.ceilings import measure_ceilings

        self.on_event(Event("stage", "measuring ceilings (peak FLOP/s, bandwidth)", stage="ceilings"))
        self.ceilings = measure_ceilings(self.detect(), quick=quick)
        self.results["ceilings"] = self.ceilings.to_dict()
        return self.ceilings

    def load(self, source: str, *, input_shape: str | None = None, trust_code: bool = False):
        """Load and validate the model; resets everything measured for a previous model."""
        from planner.models import load_model

        self.model = load_model(source, input_shape=input_shape, trust_code=trust_code)
        self.baseline = self.reference = self.plan = self.path = None
        self.answers = []
        self.results["model"] = self.model.describe()
        self.results["candidates"] = []
        for key in ("baseline", "checklist", "decision_path", "plan", "ranking", "best"):
            self.results.pop(key, None)
        return self.model

    def set_target(self, target: str = "auto") -> str:
        """Resolve and record the deployment target."""
        self.target = resolve_target(target, self.detect())
        self.results["target"] = self.target
        return self.target

    def set_requirements(self, *, toml_path: Path | None = None, overrides: dict | None = None):
        """Requirements from flags, then a TOML file, then the device class's defaults."""
        from planner.advice import load_requirements

        self.requirements = load_requirements(device_class=str(self.detect().device_class),
                                              toml_path=toml_path, overrides=overrides or {})
        self.results["requirements"] = self.requirements.to_dict()
        return self.requirements

    def set_out_dir(self, out: Path | None) -> Path:
        """Choose and check the output folder (before measuring, so a bad one fails early)."""
        name = self.model.name if self.model else "model"
        self.out_dir = prepare_out_dir(out or default_out_dir(name, self.target or "auto"))
        return self.out_dir

    def profile(self, *, quick: bool = False, timeout_s: float = 600.0,
                val_data: Path | None = None) -> dict:
        """Measure and analyse the baseline (and its outputs on `val_data`, when given)."""
        from planner.measure.valdata import load_val_data
        from planner.pipeline.baseline import profile_baseline

        self._need("model")
        if val_data is not None:
            load_val_data(val_data, input_shape=self.model.input_spec.shape)  # fail early, clearly
        self.val_data = val_data
        self.quick = quick
        self.results["quick"] = quick
        if self.ceilings is None:
            self.measure_ceilings(quick=quick)
        baseline = profile_baseline(self.model, quick=quick, hw=self.detect(), ceilings=self.ceilings,
                                    on_event=self.on_event, keep_outputs=True, timeout_s=timeout_s,
                                    val_data=val_data)
        self.reference = baseline.pop("_reference_outputs")
        self.baseline = baseline
        self.results["baseline"] = baseline
        self.results["candidates"] = [_baseline_as_candidate(baseline).to_dict()]
        self.save()
        return baseline

    def decide(self, *, replies: dict | None = None):
        """Answer the checklist, walk the decision tree and make the plan.

        `replies` maps a checklist question's id to the user's answer ("yes"/"no" become booleans
        the decision tree can read).
        """
        from planner.advice import answer_checklist, evaluate_tree, make_plan

        self._need("baseline")
        if self.target is None:
            self.set_target("auto")
        if self.requirements is None:
            self.set_requirements()
        facts = {**self.baseline, "target": self.target}
        answers = answer_checklist(self.target, self.hw, facts, requirements=self.requirements)
        if replies:
            answers = [a.with_reply(replies[a.question.id], value=_reply_value(replies[a.question.id]))
                       if replies.get(a.question.id) else a for a in answers]
        self.answers = answers
        self.path = evaluate_tree(self.target, self.hw, facts, self.requirements, answers)
        self.plan = make_plan(target=self.target, hw=self.hw, baseline=facts,
                              requirements=self.requirements, answers=answers)
        self.results["checklist"] = [a.to_dict() for a in answers]
        self.results["decision_path"] = self.path.to_dict()
        self.results["plan"] = self.plan.to_dict()
        self.save()
        return self.plan

    def planned_plugins(self) -> list[str]:
        """The plugins the plan's steps name, in plan order (the baseline excluded)."""
        self._need("plan")
        names = [s.plugin for s in self.plan.steps if s.plugin]
        return [n for n in dict.fromkeys(names) if n != "torch.eager"]

    def plugin_status(self) -> list[dict]:
        """Every registered plugin with whether it can run here, and why not."""
        from planner.plugins import discover

        plugins, issues = discover()
        rows = []
        planned = set(self.planned_plugins()) if self.plan else set()
        for name, plugin in plugins.items():
            reasons = plugin.check(self.detect(), self.model) if self.model else []
            rows.append({"plugin": name, "target": str(plugin.target), "summary": plugin.summary,
                         "reasons": reasons, "planned": name in planned})
        rows += [{"plugin": i.name, "target": "?", "summary": "", "reasons": [i.reason],
                  "planned": i.name in planned} for i in issues]
        return rows

    def optimize(self, *, plugins: list[str] | tuple[str, ...] | None = None,
                 timeout_s: float = 300.0) -> list[dict]:
        """Build candidates from the chosen plugins, measure each in a worker, gate and rank."""
        self._need("plan")
        names = list(plugins) if plugins else self.planned_plugins()
        from planner.pipeline.candidates import run_candidates

        run_candidates(self, names, timeout_s=timeout_s, val_data=self.val_data)
        from planner.results.ranking import rank_candidates

        rank_candidates(self.results)
        self.save()
        return self.results["candidates"]

    def finish(self, *, status: str | None = None, write_report: bool = True) -> PlanOutcome:
        """Rank, check requirements, and write results.json and the report."""
        from planner.results.ranking import rank_candidates

        results = self.results
        if status:
            results["status"] = status
        elif results.get("status") == "running":
            results["status"] = "interrupted" if self.cancel.cancelled else _overall_status(results)
        if self.baseline is not None:
            rank_candidates(results)
            if self.requirements is not None and results["candidates"]:
                # The deployment is judged by the best ranked candidate; the baseline's checks
                # stay beside it so the report can say what the plan changed.
                best = results.get("best")
                subject = results["candidates"][best if best is not None else 0]
                results["requirement_checks"] = requirement_checks(results, self.requirements,
                                                                   subject=subject)
                results["requirement_checks_subject"] = subject["label"]
                results["requirement_checks_baseline"] = requirement_checks(
                    results, self.requirements, subject=results["candidates"][0])
        results["finished"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        if self.out_dir is None:
            self.set_out_dir(None)
        outcome = PlanOutcome(results, self.out_dir)
        self.save()
        if write_report and self.baseline is not None:
            try:
                from planner.report import render_report_files

                outcome.report_path = render_report_files(results, self.out_dir)
            except Exception as exc:  # noqa: BLE001 - a report failure must not lose results.json
                results["warnings"].append(f"report not written: {type(exc).__name__}: {exc}")
                self.save()
                self.on_event(Event("warning", f"report not written: {exc}"))
        return outcome

    def save(self) -> None:
        """Write results.json atomically, if an output folder is set."""
        if self.out_dir is not None:
            write_json_atomic(self.out_dir / "results.json", self.results)

    def _need(self, attr: str) -> None:
        if getattr(self, attr) is None:
            raise PlannerError(f"the {attr} step has not run yet", f"run the {attr} step first")


def requirement_checks(results: dict, requirements, *, subject: dict) -> list[dict]:
    """Each requirement checked against one measured candidate (the best, or the baseline)."""
    from planner.advice import evaluate

    peak = (results.get("ceilings") or {}).get("peak_flops", {}).get("fp32")
    measured = {**subject, "model": results.get("model", {}),
                "flops_per_sample": (results.get("baseline") or {}).get("flops_per_sample")}
    return [c.to_dict() for c in evaluate(requirements, measured, peak_flops_per_s=peak)]


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


def _reply_value(reply: str):
    text = reply.strip().lower()
    if text in ("yes", "y", "true"):
        return True
    if text in ("no", "n", "false"):
        return False
    return reply


def _overall_status(results: dict) -> str:
    statuses = [c["status"] for c in results["candidates"]]
    if any(s == "failed" for s in statuses):
        return "partial"
    return "ok"
