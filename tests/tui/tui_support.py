"""TUI test support: a PlanSession that replays a recorded run (fixed numbers), and pilot utilities."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import threading
import time
from dataclasses import replace
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, Awaitable, Callable

import planner.tui.app as app_module
from planner.codec import from_data
from planner.engine.local import local_engine
from planner.errors import ModelLoadError
from planner.events import Event
from planner.hardware import HardwareProfile
from planner.hardware.ceilings import Ceilings
from planner.models.samples import SampleOptions
from planner.pipeline import PlanOutcome, PlanSession, prepare_out_dir
from planner.pipeline.session import overall_status
from planner.pipeline.steps import Change, Step
from planner.pipeline.validation_setup import checked_setup
from planner.results import (
    CandidateResult,
    ModelDescription,
    RunStatus,
    SequencePoint,
    rank_candidates,
    results_from_data,
)
from planner.results.values import Deployment

FIXTURES = Path(__file__).parent / "fixtures"


class PlannerApp(app_module.PlannerApp):
    """The planner's app, whose engine (when `session` is given) serves that session from a thread of the test's
    process, over the real protocol: a recorded session replays its run, a real one measures."""

    CSS_PATH = str(Path(app_module.__file__).parent / "app.tcss")  # a subclass reads it beside its own module

    def __init__(self, *, session: PlanSession | None = None, llm_planner: Any = None, **kwargs: Any) -> None:
        if session is not None:
            # A real session's measuring processes start under Textual, whose sys.stderr has no descriptor: start
            # multiprocessing's resource tracker now, while it still has one ("bad value(s) in fds_to_keep").
            resource_tracker.ensure_running()
            kwargs["connect"] = lambda on_death: local_engine(lambda: session, on_death=on_death,
                                                              llm_planner=llm_planner)
        super().__init__(**kwargs)
        self.served = session  # the engine's session, for tests that look inside it


def load_fixture() -> dict:
    """The recorded run: `planner plan --model demo:tiny --target cpu --quick`'s results.json.

    Its model and baseline list the inputs as the planner records them now (`inputs`, with axes).
    """
    return json.loads((FIXTURES / "results.json").read_text())


class RecordedModel:
    """Stands in for a LoadedModel: its name and `describe()` are the recorded ones."""

    def __init__(self, info: dict) -> None:
        self.info = info
        self.name = info["name"]

    def describe(self) -> dict:
        """The recorded description."""
        return copy.deepcopy(self.info)


class RecordedSession(PlanSession):
    """Replays tests/tui/fixtures: detection, ceilings, baseline, plugins, candidates and report.

    The checklist, decision path and plan are the real engine's, computed from the recorded
    baseline, so the TUI's views of them are exercised for real. `gate` (when set) holds the
    profile and each candidate until the test releases it, to test runs in progress. Each step
    records itself in the session's step graph as the real one does.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixture = load_fixture()
        self.recorded = results_from_data(self.fixture)
        self.gate: threading.Event | None = None
        self.fail_profile: BaseException | None = None
        self.load_calls: list[dict] = []  # what the Model step asked to load, in order

    def _wait_gate(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(30), "the test never released the gate"

    def detect(self):
        if self.hw is None:
            self.hw = from_data(self.fixture["hardware"], HardwareProfile)
            self.update(hardware=self.hw)
        return self.hw

    def energy_counters(self):
        # The recorded machine's probe, not this one's: a machine with a readable counter would change the screens.
        from planner.hardware.energy import CounterProbe

        return {"cpu": CounterProbe(reason="no CPU energy counter: no /sys/class/powercap (the kernel exposes no "
                                           "RAPL here: a VM, a container or a non-x86 CPU)")}

    def measure_ceilings(self, *, quick: bool = False, refresh: bool = False):
        self.refreshed = getattr(self, "refreshed", 0) + int(refresh)  # how often the user asked to measure again
        self.on_event(Event("stage", "measuring ceilings (peak FLOP/s, bandwidth)", stage="ceilings"))
        self.ceilings = from_data(self.fixture["ceilings"], Ceilings)
        self.update(ceilings=self.ceilings)
        self.done(Step.HARDWARE)
        return self.ceilings

    def load(self, source: str, *, input_shape: str | None = None, inputs: list[str] | None = None,
             trust_code: bool = False, val_data: Path | None = None, samples: SampleOptions | None = None,
             output_kinds: tuple[str, ...] = ()):
        self.load_calls.append({"source": source, "input_shape": input_shape, "inputs": inputs,
                                "trust_code": trust_code, "val_data": val_data,
                                "val_preset": samples.preset if samples is not None else None,
                                "output_kinds": output_kinds})
        if source != self.fixture["model"]["source"]:
            raise ModelLoadError(f"unknown model {source!r} in the recorded session",
                                 f"use {self.fixture['model']['source']}")
        model = RecordedModel(self.fixture["model"])
        # The real checks of what the model is judged on, against the recorded model's one output.
        self.given = checked_setup(model, val_data=val_data, samples=samples, output_kinds=output_kinds)
        self.model = model
        self.out_dir = None  # as the real load: the folder is chosen again for the model now loaded
        self.update(model=from_data(self.model.describe(), ModelDescription))
        self.invalidate(Change.MODEL)
        return self.model

    def set_target(self, target: str = "auto") -> str:
        return super().set_target(self.fixture["target"] if target == "auto" else target)

    def profile(self, *, quick: bool = False, timeout_s: float = 600.0):
        self._need(self.model, "model")
        self._start_run("profile")  # the real session's folder and status rules
        try:
            return self._replay_profile(quick)
        finally:
            self._end_run()

    def _replay_profile(self, quick: bool):
        self.quick = quick
        self.update(quick=quick)
        if self.ceilings is None:
            self.measure_ceilings(quick=quick)
        self.on_event(Event("stage", "timing the baseline: torch eager fp32 (cpu)", stage="baseline",
                            index=2, total=4))
        self._wait_gate()
        if self.cancel.cancelled:
            # As the real engine does when its measuring process is ended.
            raise RuntimeError("the baseline measurement was stopped")
        if self.fail_profile is not None:
            raise self.fail_profile
        baseline = self.recorded.baseline
        self.on_event(Event("stage_done", "baseline measured", stage="baseline"))
        self.baseline, self.reference = baseline, []
        self.done(Step.PROFILE)
        self.update(baseline=baseline, candidates=self.recorded.candidates[:1], ranking=None)
        self.save()
        return baseline

    def plugin_status(self) -> list[dict]:
        rows = json.loads((FIXTURES / "plugin_status.json").read_text())
        planned = set(self.planned_plugins()) if self.plan else set()
        for row in rows:
            row["planned"] = row["plugin"] in planned
        return rows

    def optimize(self, *, plugins=None, timeout_s: float = 300.0, val_data=None):
        self._need(self.plan, "plan")
        self.set_out_dir(None)
        self._start_run("optimize")  # the real session's folder and status rules
        self.discard(Step.OPTIMIZE)
        recorded = self.recorded.candidates[1:]
        for i, cand in enumerate(recorded):
            if self.cancel.cancelled:
                self.stopped_before([c.label for c in recorded[i:]])
                break
            self.on_event(Event("candidate", f"measuring {cand.label}", stage="measure", index=i,
                                total=len(recorded)))
            self._wait_gate()
            self.add_candidate(cand)
            self.on_event(Event("candidate_done", f"  ok: {cand.label}", stage="measure", index=i + 1,
                                total=len(recorded)))
        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements))
        self.done(Step.OPTIMIZE)
        self._end_run()
        return self.results.candidates

    def deploy(self) -> tuple[Deployment, ...]:
        """The winner's package as a stand-in (there is no model here to export): deploy/winner/manifest.json names
        it, as a real package's manifest does; the session records it as the real deploy does."""
        out_dir = self.set_out_dir(None)
        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements))
        self._remove_packages(out_dir)
        best, ranking = self.results.best, self.results.ranking
        records: tuple[Deployment, ...] = ()
        if best is not None and ranking is not None:
            (out_dir / "deploy" / "winner").mkdir(parents=True)
            manifest = {"candidate": {"label": best.label}, "measured": {"p50_ms": best.p50}}
            (out_dir / "deploy" / "winner" / "manifest.json").write_text(json.dumps(manifest))
            records = (Deployment(role="winner", label=best.label, candidate=ranking.best, folder="deploy/winner",
                                  runtime="onnxruntime"),)
        self.update(deployments=records)
        self._write(sealed=True)
        return records

    def finish(self, *, status: str | None = None, write_report: bool = True) -> PlanOutcome:
        out_dir = self.set_out_dir(None)
        # The status as the real finish decides it, so a cancelled run is saved as interrupted here too.
        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements),
                    status=RunStatus(status) if status else overall_status(self.results,
                                                                           cancelled=self.cancel.cancelled))
        if not any(d.folder for d in self.results.deployments):
            self._remove_packages(out_dir)
        self._write(sealed=True)
        report = out_dir / "report.md"
        shutil.copyfile(FIXTURES / "report.md", report)
        self.done(Step.REPORT)
        return PlanOutcome(self.results, self.out_dir, report)

    def set_out_dir(self, out: Path | None) -> Path:
        if out is None and self.out_dir is not None:
            return self.out_dir
        path = prepare_out_dir(out or Path("out"))
        self.out_dir = path
        return path


LLM_FOLDER = FIXTURES / "llm" / "tiny"
"""A tiny Llama's folder as the engine reads its facts: its config, its weights' header (the tensors themselves are
left out) and a stand-in tokenizer file. Its facts: 2 layers, 4 heads sharing 2 key/value heads of 16, vocabulary
512, context 1,024 tokens, 139,584 parameters."""


class RecordedLlmPlanner:
    """Replays a recorded LLM plan (tests/tui/fixtures/llm: `planner plan --model tiny --quick --plugins llm.torch`)
    in the engine's place of planner.llm.plan.run_llm_plan: the same progress events, then its results.json and a
    report.md written from it. `gate` (when set) holds each candidate's measurement until the test releases it; a
    cancel then leaves the candidates after it not reached, as the real plan does."""

    def __init__(self) -> None:
        self.gate: threading.Event | None = None
        self.calls: list[Any] = []  # the LlmOptions of each plan asked for

    def _wait_gate(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(30), "the test never released the gate"

    def __call__(self, options: Any, *, on_event: Callable[[Event], None], cancel: Any) -> Any:
        from planner.llm.plan import LlmOutcome
        from planner.llm.report import write_report
        from planner.llm.results import read_llm_plan, write_llm_plan
        from planner.pipeline.outdir import default_out_dir

        self.calls.append(options)
        plan = read_llm_plan(FIXTURES / "llm" / "results.json")
        out_dir = prepare_out_dir(options.out or default_out_dir(plan.facts.name, "llm"))
        assert plan.roof is not None
        on_event(Event("stage", f"Measuring how fast {plan.threads} thread(s) read memory (the decode roof)",
                       stage="roof"))
        on_event(Event("log", f"Read roof: {plan.roof.bytes_per_s / 1e9:.1f} GB/s with {plan.threads} thread(s)"))
        on_event(Event("stage", "Building PyTorch eager candidates", stage="build"))
        candidates = []
        for candidate in plan.candidates:
            if cancel is not None and cancel.cancelled:
                candidates.append(replace(candidate, status="not reached", reason="cancelled", timings=None,
                                          fidelity=None))
                continue
            on_event(Event("stage", f"Measuring {candidate.title}", stage="measure"))
            self._wait_gate()
            candidates.append(candidate)
            on_event(Event("stage_done", f"  {candidate.title}: measured"))
        interrupted = cancel is not None and cancel.cancelled
        measured = {c.label for c in candidates if c.status == "measured"}
        plan = replace(plan, candidates=tuple(candidates), status="interrupted" if interrupted else "ok",
                       winner=plan.winner if plan.winner in measured else "",
                       decision=plan.decision if plan.winner in measured else "the test stopped the plan first")
        write_llm_plan(plan, out_dir)
        return LlmOutcome(plan, out_dir, write_report(plan, out_dir), interrupted=interrupted)


class SlowCandidateSession(RecordedSession):
    """The recorded run with its slowest candidate (ONNX Runtime with 2 parallel requests) at a 42 ms p50, as a
    busy machine measured one (issue 38): its candidates' p50s span three decades, 0.0364 to 42 ms, and its speedup
    over the baseline's 0.297 ms is 0.00706x."""

    SLOW = "onnxruntime all parallel 2x1t"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        base = self.recorded.baseline.latency_ms.p50_ms
        cands = tuple(replace(c, latency_ms=replace(c.latency_ms, p50_ms=42.0, mean_ms=42.0), speedup=base / 42.0)
                      if c.label == self.SLOW and c.latency_ms is not None else c for c in self.recorded.candidates)
        self.recorded = replace(self.recorded, candidates=cands)


class TwoModels(RecordedSession):
    """The recorded session, which also loads `demo:other` (the same recording under another name)."""

    def load(self, source: str, **kwargs):
        if source == "demo:other":
            self.fixture["model"] = {**self.fixture["model"], "source": source, "name": "other"}
        return super().load(source, **kwargs)


async def settle(pilot, limit_s: float = 20.0) -> None:
    """Wait until every widget of the app's screen has mounted (bounded: `limit_s` seconds)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and any(not widget.is_mounted for widget in pilot.app.screen.walk_children()):
        await pilot.pause(0.02)


def run_app(app, body: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (80, 24)) -> None:
    """Run `body(pilot)` against the app at a terminal size (tests are synchronous: no asyncio plugin)."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await body(pilot)
            # Ending the app while a screen is still mounting fails inside Textual (a Select whose label
            # is not composed yet): on a loaded machine mounting can outlast a short test body.
            await settle(pilot)

    asyncio.run(main())


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 120.0, what: str = "") -> None:
    """Poll (letting the app process messages) until `condition()` holds.

    Each poll is `pilot.pause()`: until the screen has handled what was queued and the process is idle,
    not a fixed sleep, which most of a recorded run's steps would spend waiting for nothing.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        if condition():
            await pilot.pause()
            return
    raise AssertionError(f"timed out waiting for {what or condition}")


async def wait_idle(pilot, timeout: float = 120.0) -> None:
    """Wait until no engine job runs and every worker has finished."""
    app = pilot.app
    await wait_for(pilot, lambda: app.job is None, timeout, "the running job")
    await app.workers.wait_for_complete()
    await pilot.pause()


def screen_text(app) -> str:
    """The screen as plain text (what a tmux capture would show)."""
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=app.size.width, height=app.size.height, record=True,
                      color_system=None, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def drive(pilot, upto: str) -> None:
    """Walk a recorded app from start-up to the step `upto`, doing each step's action on the way."""
    from textual.widgets import Select

    from planner.tui.steps import STEP_BY_ID
    from planner.tui.widgets.toggles import TickList

    app = pilot.app
    order = ("hardware", "model", "requirements", "profile", "checklist", "tree", "optimize", "results",
             "report")
    last = order.index(upto)
    await wait_for(pilot, lambda: app.session.model is not None, 60, "the start-up load")
    await wait_idle(pilot)
    if last >= order.index("profile"):
        await pilot.press("4", "r")
        await wait_idle(pilot)
    if last >= order.index("tree"):
        await pilot.press("5")
        await pilot.pause()
        for select in app.query("#items Select").results(Select):
            select.value = "the model itself" if "the model itself" in str(select.prompt) else "no"
        await pilot.press("r")
        await pilot.pause()
    if last >= order.index("optimize"):
        await pilot.press("7")
        plugins = app.query_one(TickList)
        await wait_for(pilot, lambda: plugins.option_count > 0, 30, "the plugin list")
        await wait_idle(pilot)
    if last >= order.index("results"):
        await pilot.press("r")
        await wait_for(pilot, lambda: app.optimized, 30, "the optimize run")
        await wait_idle(pilot)
    if last >= order.index("report"):
        await pilot.press("9", "s")
        await wait_idle(pilot)
    await pilot.press(str(STEP_BY_ID[upto].number))
    await wait_idle(pilot)
    app.clear_notifications()
    await pilot.pause()


TEXT_INPUTS = [
    {"name": "input_ids", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"], "low": 0, "high": 1000,
     "range_basis": "given with --input", "values": "integers in [0, 1000) (given with --input)"},
    {"name": "attention_mask", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"], "low": None,
     "high": None, "range_basis": "", "values": "ones (nothing masked)"},
]
"""A two-input text model whose file fixes the batch at 1, as `describe()` lists its inputs."""

TEXT_SKIP = ("no batch sweep: the model's inputs fix the batch at 1 "
             "(input_ids int64 [1, sequence=64]; attention_mask int64 [1, sequence=64])")
"""The engine's words for a baseline whose inputs fix the batch."""


class TextRecordedSession(RecordedSession):
    """The recorded run as if its model were `text.onnx`: two int64 inputs, a fixed batch, a sequence sweep."""

    SOURCE = "text.onnx"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixture["model"] = {**{k: v for k, v in self.fixture["model"].items() if k != "inputs"},
                                 "source": self.SOURCE, "kind": "onnx", "name": "text",
                                 "inputs": copy.deepcopy(TEXT_INPUTS), "dynamic_batch": False,
                                 "output_shape": [1, 4], "runtime": "onnxruntime"}
        base = self.recorded.baseline
        assert base is not None
        points = (SequencePoint(8, 0.21, 38095.2), SequencePoint(16, 0.3, 53333.3),
                  SequencePoint(32, 0.46, 69565.2), SequencePoint(64, 0.67, 95522.4))
        baseline = replace(base, input_shape=(1, 64), inputs=tuple(copy.deepcopy(TEXT_INPUTS)),
                           throughput=base.throughput[:1], knee_batch=None, sequence_sweep=points,
                           info={**base.info, "sweep_skipped": TEXT_SKIP})
        self.recorded = replace(self.recorded, baseline=baseline)


def typed_candidate(data: dict) -> CandidateResult:
    """A candidate as the engine holds it, from the few fields a test names in results.json's form: the rest take
    a plain candidate's values (an ok fp32 row; a latency given only by its percentiles gets the other statistics)."""
    base = {"plugin": "", "label": "", "config": {}, "precision": "fp32", "status": "ok"}
    lat = data.get("latency_ms")
    if lat:
        p50 = lat["p50_ms"]
        lat = {"samples": 40, "mean_ms": p50, "std_ms": 0.0, "min_ms": p50, "max_ms": p50, "p90_ms": None,
               "p95_ms": None, "p99_ms": None, "iqr_ms": 0.0, "iqr_over_median": 0.0, "unstable": False,
               "ci95_rel": 0.0, **lat}
    return from_data({**base, **data, **({"latency_ms": lat} if lat else {})}, CandidateResult)
