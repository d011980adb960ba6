"""The method as steps on one session: detect → load → baseline → checklist → plan → candidates →
measure → rank → results.json and report. The TUI walks the steps; `run_plan` runs them in one go."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from planner import __version__
from planner.advice.checks import requirement_checks
from planner.errors import PlannerError
from planner.events import CancelToken, Event, EventSink, null_sink
from planner.hardware.profile import EDGE_DEVICE_CLASSES
from planner.pipeline.budget import Budget
from planner.pipeline.candidates import CONFIRM_TOP
from planner.pipeline.environment import environment, finished_environment
from planner.pipeline.outcome import PlanOutcome
from planner.pipeline.outdir import RunFolder, default_out_dir, prepare_out_dir
from planner.pipeline.steps import CHANGES, Change, Fate, Step, consequences, invalidated_by
from planner.pipeline.validation_setup import ValidationSetup, checked_setup
from planner.plugins.options import PluginOptions
from planner.results import (
    RESULTS_NAME,
    Baseline,
    CandidateResult,
    ModelDescription,
    PlanResults,
    RunStatus,
    SkippedPlugin,
    Status,
    Validation,
    from_data,
    rank_candidates,
    to_data,
    write_results,
)

if TYPE_CHECKING:
    import numpy as np

    from planner.advice import Answer, DecisionPath, Plan, Requirements
    from planner.hardware.ceilings import Ceilings
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel
    from planner.models.samples import SampleOptions
    from planner.models.valdata import PreparedValData
    from planner.pipeline.request_timing import RequestTiming
    from planner.results import Deployment

T = TypeVar("T")


def resolve_target(requested: str, hw: "HardwareProfile") -> str:
    """`auto` → nvidia where CUDA runs, edge on ARM boards, else cpu."""
    if requested != "auto":
        return requested
    from planner.plugins import cuda_usable

    if cuda_usable(hw):
        return "nvidia"
    if hw.device_class in EDGE_DEVICE_CLASSES:
        return "edge"
    return "cpu"


class PlanSession:
    """The method as steps: the TUI walks them one screen at a time, `run_plan` in one go.

    Each step keeps its typed result on the session and in `results` (the object behind
    results.json), which is written to `out_dir` after every measured candidate once an output
    folder is set. The baseline's reference outputs travel beside it in `reference`.

    The folder holds one run (planner.pipeline.outdir.RunFolder): a profile or optimize run that would replace what
    it holds writes a new folder beside it, and deploy/ is always the one results.json beside it records. The
    results' status says how the last run ended as soon as it ends ("running" while it measures), and their start
    and finish times, like everything else in them, are the loaded model's.

    The session also keeps which steps are done, by the step graph (planner/pipeline/steps.py):
    every setter and step goes through `invalidate`, `done` or `discard`, so what a change makes
    out of date is decided there once; callers ask `done_steps()` and `stale_steps()`.
    """

    def __init__(self, *, on_event: EventSink = null_sink, cancel: CancelToken | None = None) -> None:
        self.on_event = on_event
        self.cancel = cancel or CancelToken()
        self.hw: HardwareProfile | None = None
        self.ceilings: Ceilings | None = None
        self.model: LoadedModel | None = None
        self.target: str | None = None
        self.requirements: Requirements | None = None
        self.baseline: Baseline | None = None
        self.reference: list[np.ndarray] | None = None
        self.answers: list[Answer] = []
        self.path: DecisionPath | None = None
        self.plan: Plan | None = None
        self.folder: RunFolder | None = None  # where results.json, the report and deploy/ go, once chosen
        self._packaged: tuple[Any, ...] | None = None  # what the packages in the folder were written for
        self.quick = False
        self.val_data: Path | None = None  # batches every reader reads (images and clips converted once)
        self.val_prepared: PreparedValData | None = None  # what they were made from, for the log and report
        self.val_data_basis = "--val-data"  # what the validation data is, for notes and results.json
        self.given = ValidationSetup()  # the validation data and output kind the model was loaded with
        self.replies: dict[str, str] = {}  # the user's replies to the checklist's open questions, by question id
        # The plan's time budget: no cap, its steps timed one by one, unless the caller sets one (`--budget`).
        self.budget = Budget(stepwise=True)
        self.request_timing: RequestTiming | None = None  # `--pipeline`: time the user's whole request too
        self.results = PlanResults(planner_version=__version__, environment=environment())
        self._energy_probes: dict[str, Any] | None = None  # energy_counters(), probed on first use
        self._done: frozenset[Step] = frozenset()
        self._stale: frozenset[Step] = frozenset()
        self._warnings_from: dict[Step, int] = {}  # where a step's own warnings start, from its discard
        self._warnings_of: dict[Step, tuple[int, int]] = {}  # a step's own warnings, to forget with it

    def update(self, **changes: Any) -> PlanResults:
        """Replace fields of the results (they are frozen) and return the new results."""
        self.results = dataclasses.replace(self.results, **changes)
        return self.results

    @property
    def out_dir(self) -> Path | None:
        """The output folder of the run the results are for, once chosen."""
        return self.folder.path if self.folder is not None else None

    @out_dir.setter
    def out_dir(self, path: Path | None) -> None:
        if self.out_dir == path:
            return
        self.folder = RunFolder(path, path) if path is not None else None
        # Packages written in another folder are not in this one: the results record none until written here.
        self._packaged = None
        if self.results.deployments:
            self.update(deployments=())

    # -- the step graph ----------------------------------------------------------------------
    def invalidate(self, change: Change | str) -> dict[Step, Fate]:
        """Record a change (another model, other inputs, target or requirements) that a setter has applied.

        The step the change sets is done with its new value; every step made from it goes stale or is
        discarded, as the step graph says. Returns what the change does to each step downstream.
        """
        self.done(CHANGES[Change(change)])
        return invalidated_by(change)

    def done(self, step: Step) -> None:
        """Record that `step` has just produced its result: it is done, and what is made from it goes out of date.

        A step made from it goes stale (kept, to be redone) or is discarded (forgotten), as the step
        graph says; a step that holds no result stays without one.
        """
        if step in self._warnings_from:
            self._warnings_of[step] = (self._warnings_from.pop(step), len(self.results.warnings))
        self._done, self._stale = self._done | {step}, self._stale - {step}
        for later, fate in consequences(step).items():
            if fate is Fate.DISCARDED:
                self._forget(later)
            elif later in self._done:
                self._done, self._stale = self._done - {later}, self._stale | {later}

    def discard(self, step: Step) -> None:
        """Forget `step`'s result and everything made from it, before the step runs again.

        A new optimize run replaces the last run's candidates (and its own warnings and skipped
        plugins) instead of adding to them; the baseline and what came before it stay.
        """
        self._forget(step)
        for later in consequences(step):
            self._forget(later)
        self._warnings_from[step] = len(self.results.warnings)

    def done_steps(self) -> frozenset[Step]:
        """The steps whose result is there and up to date."""
        return self._done

    def stale_steps(self) -> frozenset[Step]:
        """The steps whose result is kept but out of date: something it was made from has changed since."""
        return self._stale

    def is_done(self, step: Step) -> bool:
        """Whether `step`'s result is there and up to date."""
        return step in self._done

    def _forget(self, step: Step) -> None:
        """Drop a step's result from the session and the results, with the warnings it recorded itself."""
        self._done, self._stale = self._done - {step}, self._stale - {step}
        span = self._warnings_of.pop(step, None)
        if span is not None:
            start, end = span
            warnings = self.results.warnings
            self.update(warnings=warnings[:start] + warnings[end:])
            gone = end - start
            self._warnings_of = {s: (a - gone, b - gone) if a >= end else (a, b)
                                 for s, (a, b) in self._warnings_of.items()}
        if step is Step.PROFILE:
            self.baseline = self.reference = None
            self.val_data = self.val_prepared = None
            self.val_data_basis = "--val-data"
            self.budget.forget("profile")
            self.update(baseline=None, candidates=())
        elif step is Step.CHECKLIST:
            self.replies = {}
        elif step is Step.PLAN:
            self.answers, self.path, self.plan = [], None, None
            self.update(checklist=(), decision_path=None, plan=None)
        elif step is Step.OPTIMIZE:
            # The baseline (the first candidate) is the profile's: it stays.
            self.budget.forget("optimize", "packages")
            self._packaged = None
            self.update(candidates=self.results.candidates[:1], ranking=None, skipped_plugins=(), interactions=(),
                        validation=None, edge_device=None, requirement_checks=(), requirement_checks_baseline=(),
                        requirement_checks_subject="", predictions_held="", deployments=(), not_reached=())

    # -- steps -------------------------------------------------------------------------------
    def detect(self) -> "HardwareProfile":
        """Detect the hardware (once)."""
        from planner.hardware import detect

        if self.hw is None:
            self.hw = detect()
            self.update(hardware=self.hw)
        return self.hw

    def energy_counters(self) -> dict[str, Any]:
        """Which energy counter measures work on each device here ('cpu', and 'cuda' with GPUs): a
        `planner.hardware.energy.CounterProbe` each, the counter or why there is none. Probed once."""
        from planner.hardware.energy.find import probe_devices

        if self._energy_probes is None:
            self._energy_probes = probe_devices(len(self.detect().gpus))
        return self._energy_probes

    def measure_ceilings(self, *, quick: bool = False, refresh: bool = False) -> "Ceilings":
        """Measure (or read the cached) roofline ceilings of this machine; `refresh` always measures again."""
        from planner.hardware.ceilings import measure_ceilings

        self.on_event(Event("stage", "measuring ceilings (peak FLOP/s, bandwidth)", stage="ceilings"))
        self.ceilings = measure_ceilings(self.detect(), quick=quick, refresh=refresh)
        self.update(ceilings=self.ceilings)
        self.done(Step.HARDWARE)
        return self.ceilings

    def load(self, source: str, *, input_shape: str | None = None, inputs: list[str] | None = None,
             trust_code: bool = False, val_data: Path | None = None, samples: "SampleOptions | None" = None,
             output_kinds: tuple[str, ...] = ()) -> "LoadedModel":
        """Load and validate the model; everything measured for a previous model is discarded.

        `inputs` are `--input` specs; `input_shape` is the one-float-input short form. The same source
        loaded again is a change of inputs, any other a change of model (the step graph says what each
        discards). The output folder is chosen again for the new model: a default one is named after it.
        `val_data`, `samples` and `output_kinds` (`--val-data`, how its files become inputs, `--output-kind`)
        are checked against the model now, and the profile and the candidates judge it with them
        (planner.pipeline.validation_setup); a failed check keeps the previous model and its setup.
        """
        from planner.models import load_model

        model = load_model(source, input_shape=input_shape, inputs=inputs, trust_code=trust_code)
        self.given = checked_setup(model, val_data=val_data, samples=samples, output_kinds=output_kinds)
        same = self.model is not None and self.model.source.text == model.source.text
        earlier = self.model is not None
        self.model = model
        self.out_dir = None
        # describe() is also what `planner inspect --json` prints; the typed record holds the same keys.
        self.update(model=from_data(model.describe(), ModelDescription))
        self.invalidate(Change.INPUTS if same else Change.MODEL)
        if earlier:
            # The run's record starts again with the model: its start, its process tree's memory, no status or finish.
            self.update(environment=environment(), status=RunStatus.RUNNING, finished="", budget=None)
        return model

    def set_target(self, target: str = "auto") -> str:
        """Resolve and record the deployment target; a new one makes the plan and what follows it stale."""
        resolved = resolve_target(target, self.detect())
        changed = resolved != self.target
        self.target = resolved
        self.update(target=resolved)
        if changed:
            self.invalidate(Change.TARGET)
        return resolved

    def set_requirements(self, *, toml_path: Path | None = None, overrides: dict | None = None,
                         device_class: str | None = None) -> "Requirements":
        """Requirements from flags, then a TOML file, then the device class's defaults.

        `device_class` is the class of the device the model will be deployed on when it is not this
        machine (a board named with --device): its defaults apply instead of this machine's.
        """
        from planner.advice import load_requirements

        deployed_on = device_class or str(self.detect().device_class)
        requirements = load_requirements(device_class=deployed_on, toml_path=toml_path, overrides=overrides or {})
        changed = requirements != self.requirements
        self.requirements = requirements
        self.update(requirements=requirements)
        if changed:  # the same requirements applied again leave the plan as it is
            self.invalidate(Change.REQUIREMENTS)
        return requirements

    def set_out_dir(self, out: Path | None) -> Path:
        """Choose and check the output folder (before measuring, so a bad one fails early). The folder now in use
        stays when `out` is None; the default is reports/<date>-<model>-<target>, numbered when taken."""
        if out is None and self.folder is not None:
            return self.folder.path
        name = self.model.name if self.model else "model"
        path = prepare_out_dir(out or default_out_dir(name, self.target or "auto"))
        self.out_dir = path
        return path

    def _start_run(self, step: str) -> Path | None:
        """Before a profile or optimize run writes: the folder for it (a new one beside a folder that holds what the
        run would replace), and the results marked running, with no finish time, until it ends."""
        folder = self.folder
        if folder is not None and folder.holds_run_of(step):
            self.folder = folder.next()
            self._packaged = None
            self.on_event(Event("log", f"this {step} run writes to {self.folder.path}; the earlier run stays whole "
                                       f"in {folder.path}"))
        if self.folder is not None:
            self.folder.ran.add(step)
        self.update(status=RunStatus.RUNNING, finished="")
        return self.out_dir

    def _end_run(self) -> None:
        """A profile or optimize run has ended. In a plan run step by step its status says how at once (interrupted
        when cancelled), as the user may save, or not, much later; a plan in one go is running until it finishes."""
        if self.budget.stepwise:
            self.update(status=overall_status(self.results, cancelled=self.cancel.cancelled))
        self.save()

    def profile(self, *, quick: bool = False, timeout_s: float = 600.0,
                val_data: Path | None = None, samples: "SampleOptions | None" = None) -> Baseline:
        """Measure and analyse the baseline (and its outputs on `val_data`, when given).

        `samples` says how a folder of images or clips becomes inputs (preset, transform, sample rate).
        Without them, the ones the model was loaded with (`given`) apply.
        """
        model = self._need(self.model, "model")
        self._start_run("profile")
        try:
            with self.budget.timed("profile"):
                return self._profile(model, quick=quick, timeout_s=timeout_s, val_data=val_data, samples=samples)
        finally:
            self._end_run()

    def _profile(self, model: "LoadedModel", *, quick: bool, timeout_s: float, val_data: Path | None,
                 samples: "SampleOptions | None") -> Baseline:
        from planner.pipeline.baseline import profile_baseline

        self.val_data_basis = "--val-data"
        if val_data is None:
            val_data, samples = self.given.val_data, samples or self.given.samples
        if val_data is None:
            val_data = self._builtin_val_data(model)
        self.val_prepared = None
        if val_data is not None:
            self.val_prepared = self._prepare_val_data(val_data, model, samples)  # fails early, clearly
            val_data = self.val_prepared.folder
        self.val_data = val_data
        self.quick = quick
        self.update(quick=quick)
        if self.ceilings is None:
            self.measure_ceilings(quick=quick)
        baseline, reference = profile_baseline(model, quick=quick, hw=self.detect(), ceilings=self.ceilings,
                                               on_event=self.on_event, timeout_s=timeout_s, val_data=val_data)
        if self.request_timing is not None:
            baseline = dataclasses.replace(baseline, pipeline=self._time_requests(baseline.as_candidate(),
                                                                                  "the original model"))
        self.baseline, self.reference = baseline, reference
        self.done(Step.PROFILE)  # earlier candidates are discarded: their speedups are over the old baseline
        self.update(baseline=baseline, candidates=(baseline.as_candidate(),), ranking=None)
        if baseline.invalid:
            self.warn(f"the baseline's timing is invalid ({baseline.invalid}): no speedup is worked out against it")
        if baseline.ceilings and baseline.ceilings != to_data(self.results.ceilings):  # the baseline's are JSON
            # The baseline beat a ceiling measured while busy: the raised ceilings are the machine's now.
            from planner.hardware.ceiling_values import Ceilings

            self.ceilings = from_data(baseline.ceilings, Ceilings)
            self.update(ceilings=self.ceilings)
        self.save()
        return baseline

    def time_winner_requests(self) -> None:
        """Time the user's requests end to end with the plan's winner (`--pipeline`), when it is not the baseline."""
        best = self.results.ranking.best if self.results.ranking else None
        if self.request_timing is None or not best:  # no winner, or the original model itself
            return
        winner = self.results.candidates[best]
        split = self._time_requests(winner, "the winner")
        from planner.pipeline.request_timing import with_split

        cands = list(self.results.candidates)
        cands[best] = with_split(winner, split)
        self.update(candidates=tuple(cands))
        self.save()

    def _time_requests(self, candidate: CandidateResult, role: str) -> Any:
        """The candidate's end-to-end split; a failure is a warning, and the split records its error."""
        from planner.pipeline.request_timing import time_requests
        from planner.plugins import ModelRef

        assert self.request_timing is not None
        split = time_requests(self.request_timing, candidate, model=ModelRef.of(self._need(self.model, "model")),
                              quick=self.quick, on_event=self.on_event, role=role)
        if split.error:
            self.warn(f"--pipeline with {role}: {split.error}" + (f" ({split.fix})" if split.fix else ""))
        return split

    def _prepare_val_data(self, folder: Path, model: "LoadedModel",
                          samples: "SampleOptions | None") -> PreparedValData:
        """The validation data checked, images or clips converted once into the artifacts folder."""
        import tempfile

        from planner.models.valdata import check_labels, load_val_data, prepare_val_data

        # Converted batches live beside the candidates' artifacts; a session with no output folder yet
        # (the TUI before saving) keeps them in a temporary folder instead of choosing one for the user.
        root = self.out_dir if self.out_dir is not None else Path(tempfile.mkdtemp(prefix="planner-val-"))
        prepared = prepare_val_data(folder, inputs=model.inputs, options=samples, workdir=root / "artifacts")
        # Every label in the folder, the calibration part's too (labels_of gives only the judged part's).
        labels = [lab for _, lab in load_val_data(prepared.folder, inputs=model.inputs) if lab is not None]
        one_class = check_labels(prepared.source, labels, tuple(getattr(model, "output_shape", ()) or ()))
        if one_class:
            self.on_event(Event("warning", f"--val-data: {one_class}"))
            self.warn(f"--val-data {prepared.source}: {one_class}")
        self.on_event(Event("log", f"validation data: {prepared.description}"))
        if prepared.skipped:
            self.on_event(Event("warning", f"--val-data: {prepared.skipped}"))
            self.warn(f"--val-data {prepared.source}: {prepared.skipped}")
        return prepared

    def _builtin_val_data(self, model: "LoadedModel") -> Path | None:
        """The validation data a demo trained on real data ships with (demo:digits), when no --val-data was given."""
        from planner.models.demo import builtin_validation
        from planner.models.source import SourceKind

        if model.source.kind is not SourceKind.DEMO:
            return None
        found = builtin_validation(model.source.target)
        if found is None:
            return None
        folder, basis = found
        self.val_data_basis = basis
        self.on_event(Event("log", f"no --val-data given: measuring accuracy on {basis} ({folder})"))
        return folder

    def baseline_facts(self) -> dict[str, Any]:
        """The baseline as the advice reads it (its results.json form), with the target."""
        baseline = self._need(self.baseline, "baseline")
        return {**to_data(baseline), "target": self.target}

    def decide(self, *, replies: dict | None = None) -> "Plan":
        """Answer the checklist, walk the decision tree and make the plan.

        `replies` maps a checklist question's id to the user's answer ("yes"/"no" become booleans
        the decision tree can read); they are kept (`self.replies`) for later re-plans, which pass
        none. Replies given here are the user's answers to the checklist: that step is done too.
        """
        from planner.advice import answer_checklist, evaluate_tree, make_plan

        self._need(self.baseline, "baseline")
        target = self.target or self.set_target("auto")
        requirements = self.requirements or self.set_requirements()
        hw = self.detect()
        facts = self.baseline_facts()
        answers = answer_checklist(target, hw, facts, requirements=requirements)
        given = replies is not None
        replies = dict(replies) if replies is not None else self.replies
        if replies:
            answers = [a.with_reply(replies[a.question.id], value=_reply_value(replies[a.question.id]))
                       if replies.get(a.question.id) else a for a in answers]
        self.answers = answers
        from planner.plugins import catalog

        declared = catalog()
        self.path = evaluate_tree(target, hw, facts, requirements, answers, catalog=declared)
        self.plan = make_plan(target=target, hw=hw, baseline=facts, requirements=requirements, answers=answers,
                              catalog=declared)
        # Results hold the records results.json has always written (an answer flattens its question...).
        self.update(checklist=tuple(a.record() for a in answers), decision_path=self.path.record(),
                    plan=self.plan.record())
        if given:  # the user's answers: the checklist step is done (and the plan made from them)
            self.replies = replies
            self.done(Step.CHECKLIST)
        self.done(Step.PLAN)
        self.save()
        return self.plan

    def planned_plugins(self) -> list[str]:
        """The plugins the plan's steps name, in plan order."""
        return list(self._need(self.plan, "plan").plugins)

    def plugin_status(self) -> list[dict]:
        """Every registered plugin with its title (plain words, for people), whether it can run here, and why not.

        `baseline` marks the plugin whose candidate is the baseline (measured by the profile step).
        """
        from planner.plugins import discover

        plugins, issues = discover()
        rows = []
        planned = set(self.planned_plugins()) if self.plan else set()
        for name, plugin in plugins.items():
            reasons = plugin.check(self.detect(), self.model) if self.model else []
            rows.append({"plugin": name, "title": getattr(plugin, "title", "") or name, "target": str(plugin.target),
                         "summary": plugin.summary, "reasons": reasons, "planned": name in planned,
                         "baseline": bool(getattr(plugin, "is_baseline", False))})
        rows += [{"plugin": i.name, "title": i.name, "target": "?", "summary": "", "reasons": [i.reason],
                  "planned": i.name in planned, "baseline": False} for i in issues]
        return rows

    def optimize(self, *, plugins: list[str] | tuple[str, ...] | None = None,
                 timeout_s: float = 300.0, plugin_options: PluginOptions | None = None,
                 confirm: int = CONFIRM_TOP) -> tuple[CandidateResult, ...]:
        """Build candidates from the chosen plugins, measure each in a worker, gate and rank.

        In a quick run the `confirm` leaders are timed again in turns with the full method's settings before
        ranking, until they are told apart or the plan's confirmation allowance is spent (CandidateRun.confirm).
        A run replaces the previous run's candidates, warnings and skipped plugins (the baseline stays); when the
        folder holds an earlier run, this one writes a new folder beside it (`_start_run`).
        """
        self._need(self.plan, "plan")
        self.set_out_dir(None)
        out_dir = self._start_run("optimize")
        assert out_dir is not None  # set just above
        self.discard(Step.OPTIMIZE)
        try:
            with self.budget.timed("optimize"):
                return self._optimize(out_dir, plugins=plugins, timeout_s=timeout_s, plugin_options=plugin_options,
                                      confirm=confirm)
        finally:
            self._end_run()

    def _optimize(self, out_dir: Path, *, plugins: list[str] | tuple[str, ...] | None, timeout_s: float,
                  plugin_options: PluginOptions | None, confirm: int) -> tuple[CandidateResult, ...]:
        from planner.pipeline.candidates import CandidateRun

        model, hw, baseline = self._need(self.model, "model"), self.detect(), self._need(self.baseline, "baseline")
        reference = self._need(self.reference, "profile")
        names = list(plugins) if plugins else self.planned_plugins()
        plugin_options = plugin_options or PluginOptions()
        if plugin_options.output_kind is None and self.given.output_kind is not None:
            kind, basis = self.given.output_kind  # the --output-kind the model was loaded with
            plugin_options = dataclasses.replace(plugin_options, output_kind=kind, output_kind_basis=basis)
        run = CandidateRun(hw=hw, model=model, baseline=baseline, reference=reference,
                           workdir=out_dir / "artifacts", quick=self.quick, val_data=self.val_data,
                           val_data_basis=self.val_data_basis,
                           accuracy_budget=getattr(self.requirements, "accuracy_budget", None),
                           streams=getattr(self.requirements, "min_throughput", None) is not None,
                           on_event=self.on_event, cancel=self.cancel, sink=self,
                           plugin_options=plugin_options, confirm_top=confirm, budget=self.budget)
        run.run(names, timeout_s=timeout_s)
        ranking = rank_candidates(self.results.candidates, self.results.requirements)
        if self.quick and confirm > 0 and not self.cancel.cancelled:
            cands = self.results.candidates
            # A leader the full method finds slower can fall below one only screened: confirm until the top
            # few all carry full figures, within a few rounds and the one allowance every round shares.
            for _ in range(CONFIRM_ROUNDS):
                confirmed = run.confirm(cands, ranking.order, timeout_s=timeout_s)
                if not confirmed:
                    break
                cands = tuple(confirmed.get(i, c) for i, c in enumerate(cands))
                ranking = rank_candidates(cands, self.results.requirements)
            self.update(candidates=cands)
        self.update(ranking=ranking)
        if not self.cancel.cancelled:
            from planner.pipeline.interaction import measure_interactions

            self.update(interactions=measure_interactions(run, self.results.candidates, ranking.order,
                                                          timeout_s=timeout_s))
        self.done(Step.OPTIMIZE)
        return self.results.candidates

    # -- what the candidates step records (CandidateRun's sink) ----------------------------------
    def add_candidate(self, result: CandidateResult) -> None:
        """Record one measured (or failed) candidate and write results.json."""
        self.update(candidates=(*self.results.candidates, result))
        self.save()

    def warn(self, message: str) -> None:
        """Record a warning in the results."""
        self.update(warnings=(*self.results.warnings, message))

    def stopped_before(self, names: list[str]) -> None:
        """Record what a cancelled run did not reach (candidates' labels, plugins not built), with a warning."""
        if not names:
            return
        self.update(not_reached=(*self.results.not_reached, *names))
        count = len(self.results.not_reached)
        self.warn(f"cancelled before {count} candidate{'s' if count != 1 else ''} "
                  f"{'were' if count != 1 else 'was'} reached")

    def skip_plugin(self, plugin: str, reasons: list[str]) -> None:
        """Record a plugin that could not run here, with every reason."""
        self.update(skipped_plugins=(*self.results.skipped_plugins, SkippedPlugin(plugin, tuple(reasons))))

    def set_validation(self, validation: Validation, *, baseline_accuracy: float | None) -> None:
        """Record the validation data, and the baseline's own accuracy on its labels."""
        cands = self.results.candidates
        if baseline_accuracy is not None and cands and cands[0].fidelity is not None:
            first = dataclasses.replace(cands[0], fidelity=dataclasses.replace(cands[0].fidelity,
                                                                                accuracy=baseline_accuracy))
            cands = (first, *cands[1:])
        prepared = self.val_prepared
        if prepared is not None:
            # The user's folder, not the converted copy the candidates read, and what was made of it.
            validation = dataclasses.replace(validation, folder=str(prepared.source),
                                             description=prepared.description, skipped=prepared.skipped)
        self.update(validation=validation, candidates=cands)

    def deploy(self) -> tuple["Deployment", ...]:
        """Write the hand-over packages (deploy/ in the out folder) for the winner and each roadmap phase's best,
        and record them; a package that cannot be written is a warning and its record's reason, never an error."""
        from planner.deploy import DEPLOY_DIR, write_deployments
        from planner.deploy.samples import compared_feeds, sample_rows
        from planner.plugins import ModelRef

        model, reference = self._need(self.model, "model"), self._need(self.reference, "profile")
        out_dir = self.set_out_dir(None)
        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements))
        written_for = (out_dir, self.results.candidates, self.results.ranking)
        if self._packaged == written_for and (out_dir / DEPLOY_DIR).is_dir():
            return self.results.deployments  # these results' packages are in this folder already
        try:
            with self.budget.timed("packages"):
                feeds, outputs = sample_rows(compared_feeds(model.inputs, val_data=self.val_data, quick=self.quick),
                                             reference, batch=model.inputs.batch)
                deployments = write_deployments(self.results, model=ModelRef.of(model), feeds=feeds,
                                                reference=outputs, out_dir=out_dir, warn=self.warn)
        except Exception as exc:  # noqa: BLE001 - a hand-over package is never a reason to lose the plan
            why = f"the hand-over packages could not be written: {type(exc).__name__}: {exc}"
            self.warn(why)
            self.skip_deploy(why)
            self._remove_packages(out_dir)
        else:
            self.update(deployments=deployments)
        self._packaged = written_for
        self._write(sealed=True)
        return self.results.deployments

    def skip_deploy(self, why: str) -> None:
        """Record that no hand-over package was written, and why, so the report says so instead of guessing (and
        `finish` removes a deploy/ this results.json does not record)."""
        from planner.results.values import Deployment

        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements))
        best = self.results.best
        index = self.results.ranking.best if self.results.ranking is not None else None
        self.update(deployments=(Deployment(role="winner", label=best.label if best is not None else "",
                                            candidate=index, reason=why),))

    def finish(self, *, status: RunStatus | str | None = None, write_report: bool = True) -> PlanOutcome:
        """Rank, check requirements, and write results.json and the report."""
        self.update(budget=self.budget.record())
        # Decided afresh at every finish: the TUI saves (finishes) after each run, and a run cancelled after an
        # earlier save must not keep that save's "ok" (nor a complete run after a cancelled one its "interrupted").
        # The token is the last run's: the TUI gives each profile or optimize run a fresh one.
        self.update(status=RunStatus(status) if status else overall_status(self.results,
                                                                           cancelled=self.cancel.cancelled))
        if self.baseline is not None:
            ranking = rank_candidates(self.results.candidates, self.results.requirements)
            self.update(ranking=ranking)
            cands = self.results.candidates
            if self.requirements is not None and cands:
                # The deployment is judged by the best ranked candidate; the baseline's checks
                # stay beside it so the report can say what the plan changed.
                subject = cands[ranking.best if ranking.best is not None else 0]
                self.update(requirement_checks=requirement_checks(self.results, self.requirements, subject=subject),
                            requirement_checks_subject=subject.label,
                            requirement_checks_baseline=requirement_checks(self.results, self.requirements,
                                                                           subject=cands[0]))
        from planner.advice.predict import summary

        predicted = [(c.prediction, c.speedup) for c in self.results.candidates if c.prediction is not None]
        if predicted:
            self.update(predictions_held=summary(predicted))
        # The process tree's peak so far (and its own cgroup's, where it has one) goes into the environment record.
        self.update(environment=finished_environment(self.results.environment),
                    finished=dt.datetime.now().astimezone().isoformat(timespec="seconds"))
        out_dir = self.set_out_dir(None)
        if not any(d.folder for d in self.results.deployments):
            self._remove_packages(out_dir)  # deploy/ is always the one results.json beside it records
        self._write(sealed=True)
        outcome = PlanOutcome(self.results, out_dir)
        if write_report and self.baseline is not None:
            try:
                from planner.report import render_report_files

                outcome.report_path = render_report_files(self.results, out_dir)
            except Exception as exc:  # noqa: BLE001 - a report failure must not lose results.json
                self.warn(f"report not written: {type(exc).__name__}: {exc}")
                self._write(sealed=True)
                self.on_event(Event("warning", f"report not written: {exc}"))
            outcome.results = self.results
        self.done(Step.REPORT)
        return outcome

    def save(self) -> None:
        """Write results.json atomically, if an output folder is set and no save or packages of these results are
        there yet (those are rewritten only by `finish` and `deploy`, with what they were made from)."""
        if self.folder is not None and not self.folder.sealed:
            self._write()

    def _write(self, *, sealed: bool = False) -> None:
        """Write results.json atomically into the folder; `sealed`: a report or packages made from it go beside it."""
        folder = self.folder
        if folder is None:
            return
        write_results(folder.path / RESULTS_NAME, self.results)
        if self.results.baseline is not None:
            folder.ran.add("profile")
        folder.sealed = folder.sealed or sealed

    @staticmethod
    def _remove_packages(out_dir: Path) -> None:
        """Remove a deploy/ that no results.json beside it records (an earlier plan's, or one half written)."""
        import shutil

        from planner.deploy import DEPLOY_DIR

        shutil.rmtree(out_dir / DEPLOY_DIR, ignore_errors=True)

    @staticmethod
    def _need(value: T | None, step: str) -> T:
        if value is None:
            raise PlannerError(f"the {step} step has not run yet", f"run the {step} step first")
        return value


CONFIRM_ROUNDS = 3
"""At most this many rounds of confirming a quick run's leaders."""


def _reply_value(reply: str) -> bool | str:
    text = reply.strip().lower()
    if text in ("yes", "y", "true"):
        return True
    if text in ("no", "n", "false"):
        return False
    return reply


def overall_status(results: PlanResults, *, cancelled: bool) -> RunStatus:
    """What a finished plan's status is, from what it holds: INTERRUPTED when its last run was cancelled
    (candidates not reached, or leaders unconfirmed), PARTIAL when a candidate failed, else OK."""
    if cancelled or results.not_reached:
        return RunStatus.INTERRUPTED
    if any(c.status is Status.FAILED for c in results.candidates):
        return RunStatus.PARTIAL
    return RunStatus.OK
