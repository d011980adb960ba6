"""A run's folder has one owner: a re-run, a cancel or another model never leaves results.json, report.md and deploy/
describing different runs, and the counts, status and times in them are the run's own.

The session is the real PlanSession (its folders, statuses, records and report); only the measuring is replayed
from demo:tiny's recorded quick plan (tests/tui/fixtures/results.json), and the packages are stand-ins that name
their candidate, as a real package's manifest does.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from planner.hardware import HardwareProfile
from planner.hardware.ceilings import Ceilings
from planner.pipeline import PlanSession
from planner.pipeline.budget import Budget
from planner.pipeline.steps import Step
from planner.results import Deployment, from_data, read_results, results_from_data
from planner.results.counts import CandidateCounts

FIXTURE = json.loads((Path(__file__).parents[1] / "tui" / "fixtures" / "results.json").read_text())
RECORDED = results_from_data(FIXTURE)
MEASURED = RECORDED.candidates[1:]  # eight candidates after the baseline


class Clock:
    """A clock the test moves: each step takes what the test says, and so does a user's pause."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """What the replay does: cancel after this many candidates (None: never), and how long each step takes."""

    cancel_after: int | None = None
    step_s = 10.0
    package_writes = 0
    package_error: Exception | None = None


@pytest.fixture
def script(monkeypatch) -> Scripted:
    """Replace the measuring and the package writer with the recorded run's replay."""
    import planner.deploy
    import planner.deploy.samples
    import planner.models
    import planner.pipeline.baseline
    import planner.pipeline.candidates
    import planner.pipeline.interaction
    import planner.report.figures

    scripted = Scripted()
    clock: Clock | None = None

    def advance() -> None:
        if clock is not None:
            clock.now += scripted.step_s

    def load_model(source: str, **_) -> SimpleNamespace:
        info = {**FIXTURE["model"], "source": source, "name": source.split(":")[-1]}
        return SimpleNamespace(name=info["name"], source=SimpleNamespace(text=source, kind="file", target=source),
                               inputs=SimpleNamespace(batch=1), trust_code=False, describe=lambda: dict(info))

    def profile_baseline(*_, **__):
        advance()
        return RECORDED.baseline, []

    class Run:
        def __init__(self, **kwargs) -> None:
            self.sink, self.cancel = kwargs["sink"], kwargs["cancel"]

        def run(self, names, *, timeout_s: float) -> None:
            advance()
            for i, cand in enumerate(MEASURED):
                if self.cancel.cancelled:
                    self.sink.stopped_before([c.label for c in MEASURED[i:]])
                    return
                self.sink.add_candidate(cand)
                if scripted.cancel_after == i + 1:
                    self.cancel.cancel()

    def write_deployments(results, *, out_dir: Path, **_) -> tuple[Deployment, ...]:
        scripted.package_writes += 1
        if scripted.package_error is not None:
            raise scripted.package_error
        best, index = results.best, results.ranking.best
        (out_dir / "deploy" / "winner").mkdir(parents=True, exist_ok=True)
        (out_dir / "deploy" / "winner" / "manifest.json").write_text(json.dumps({"candidate": {"label": best.label}}))
        return (Deployment(role="winner", label=best.label, candidate=index, folder="deploy/winner"),)

    monkeypatch.setattr(planner.models, "load_model", load_model)
    monkeypatch.setattr(planner.pipeline.baseline, "profile_baseline", profile_baseline)
    monkeypatch.setattr(planner.pipeline.candidates, "CandidateRun", Run)
    monkeypatch.setattr(planner.pipeline.interaction, "measure_interactions", lambda *_, **__: ())
    monkeypatch.setattr(planner.deploy, "write_deployments", write_deployments)
    monkeypatch.setattr(planner.deploy.samples, "compared_feeds", lambda *_, **__: [])
    monkeypatch.setattr(planner.deploy.samples, "sample_rows", lambda *_, **__: ([], []))
    # The figures take seconds to draw and tell nothing about the folder: the report says none was drawn.
    monkeypatch.setattr(planner.report.figures, "draw_figures", lambda *_, **__: ({}, {}))

    def use_clock(c: Clock) -> None:
        nonlocal clock
        clock = c

    scripted.use_clock = use_clock  # type: ignore[attr-defined]
    return scripted


def new_session(clock: Clock, script: Scripted) -> PlanSession:
    """A session as the TUI's engine holds one: no plan-wide clock, its steps run one at a time."""
    script.use_clock(clock)  # type: ignore[attr-defined]
    s = PlanSession()
    s.budget = Budget(clock=clock, stepwise=True)
    s.hw = from_data(FIXTURE["hardware"], HardwareProfile)
    s.ceilings = from_data(FIXTURE["ceilings"], Ceilings)
    s.update(hardware=s.hw, ceilings=s.ceilings)
    return s


def profile_and_plan(s: PlanSession, model: str = "demo:tiny") -> None:
    """Load, profile and plan, as the TUI's first steps do (the plan itself is not what these tests look at)."""
    s.load(model)
    s.set_target("cpu")
    s.set_requirements()
    s.profile()
    s.plan = object()  # type: ignore[assignment]
    s.done(Step.PLAN)


def save(s: PlanSession) -> Path:
    """What the TUI's s does: the packages (after an optimize run), then results.json and the report."""
    if Step.OPTIMIZE in s.done_steps() | s.stale_steps():
        s.deploy()
    outcome = s.finish()
    assert outcome.out_dir is not None
    return outcome.out_dir


def folder_files(folder: Path) -> dict[str, str]:
    """Every file in the folder with its content, to tell whether anything in it changed."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and "artifacts" not in p.parts}


def assert_agrees(folder: Path) -> None:
    """results.json, report.md and deploy/ in `folder` describe the same run."""
    results = read_results(folder / "results.json")
    recorded = {d.folder: d.label for d in results.deployments if d.folder}
    written = {str(p.parent.relative_to(folder)): json.loads(p.read_text())["candidate"]["label"]
               for p in folder.glob("deploy/*/manifest.json")}
    assert written == recorded
    if results.best is not None and recorded:
        assert recorded["deploy/winner"] == results.best.label
    report = folder / "report.md"
    if report.exists():
        text = report.read_text()
        assert f"status **{results.status}**" in text
        assert f"finished {results.finished}" in text
        counts = CandidateCounts.of(results)
        if counts.total:
            assert f"**Candidates**: {counts.words(noun=False)}" in text
        for folder_name in recorded:
            assert f"`{folder_name}/`" in text  # the Deploy line runs the package that is there
        if not recorded:
            assert "deploy/winner" not in text


def test_a_cancelled_rerun_writes_its_own_folder_and_leaves_the_saved_run_whole(tmp_path, script):
    clock = Clock()
    s = new_session(clock, script)
    profile_and_plan(s)
    s.set_out_dir(tmp_path / "run")
    s.optimize(plugins=["any"])
    first = save(s)
    assert first == tmp_path / "run"
    assert read_results(first / "results.json").status == "ok"
    assert_agrees(first)
    kept = folder_files(first)
    assert "deploy/winner/manifest.json" in kept

    # Optimize again, cancelled after two candidates: a new folder beside the first, which nothing touches.
    script.cancel_after = 2
    s.optimize(plugins=["any"])
    second = s.out_dir
    assert second == tmp_path / "run-2"
    assert folder_files(first) == kept
    unsaved = read_results(second / "results.json")
    # Before any save the folder already says how the run ended, with nothing of the first run's beside it.
    assert (unsaved.status, unsaved.finished) == ("interrupted", "")
    assert CandidateCounts.of(unsaved) == CandidateCounts(measured=2, not_reached=6)
    assert not (second / "deploy").exists() and not (second / "report.md").exists()

    assert save(s) == second
    saved = read_results(second / "results.json")
    assert saved.status == "interrupted" and len(saved.not_reached) == 6
    assert_agrees(second)
    assert "2 measured, 6 not reached (the run was cancelled first)" in (second / "report.md").read_text()
    assert folder_files(first) == kept


def test_a_profile_measured_again_after_a_save_writes_a_new_folder(tmp_path, script):
    s = new_session(Clock(), script)
    profile_and_plan(s)
    s.set_out_dir(tmp_path / "run")
    s.optimize(plugins=["any"])
    first = save(s)
    kept = folder_files(first)
    s.profile()  # the candidates are discarded: their speedups were over the old baseline
    assert s.out_dir == tmp_path / "run-2"
    assert folder_files(first) == kept
    assert len(read_results(s.out_dir / "results.json").candidates) == 1  # the baseline alone


def test_another_model_starts_its_own_record_and_folder(tmp_path, script, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = new_session(Clock(), script)
    profile_and_plan(s)
    s.optimize(plugins=["any"])
    first = save(s)
    digits = read_results(first / "results.json")
    assert digits.finished
    s.load("demo:other")
    # The finish, status, start and budget of the first model's plan are not the new model's.
    assert (s.results.finished, s.results.status, s.results.budget, s.out_dir) == ("", "running", None, None)
    assert s.results.environment is not None and digits.environment is not None
    assert s.results.environment.date >= digits.environment.date
    s.set_target("cpu")
    s.profile()
    other = save(s)
    assert other != first and other.name.endswith("other-cpu")
    results = read_results(other / "results.json")
    assert results.model is not None and results.model.name == "other"
    assert len(results.candidates) == 1 and not results.deployments
    assert not (other / "deploy").exists()
    assert_agrees(other)
    assert read_results(first / "results.json") == digits


def test_saving_writes_the_packages_once_for_the_same_results(tmp_path, script):
    s = new_session(Clock(), script)
    profile_and_plan(s)
    s.set_out_dir(tmp_path / "run")
    s.optimize(plugins=["any"])
    save(s)
    save(s)  # s twice: the packages in the folder are these results' already
    assert script.package_writes == 1
    s.set_out_dir(tmp_path / "elsewhere")  # the user types another folder: its packages are written there
    assert not s.results.deployments
    assert save(s) == tmp_path / "elsewhere"
    assert script.package_writes == 2
    assert_agrees(tmp_path / "elsewhere")
    assert_agrees(tmp_path / "run")


def test_a_package_that_cannot_be_written_is_the_reason_the_report_gives(tmp_path, script):
    s = new_session(Clock(), script)
    profile_and_plan(s)
    out = tmp_path / "run"
    (out / "deploy" / "winner").mkdir(parents=True)  # an earlier plan's package in the folder named
    (out / "deploy" / "winner" / "manifest.json").write_text(json.dumps({"candidate": {"label": "old"}}))
    s.set_out_dir(out)
    s.optimize(plugins=["any"])
    script.package_error = OSError("No space left on device")
    save(s)
    results = read_results(out / "results.json")
    assert [d.folder for d in results.deployments] == [""]
    assert "No space left on device" in results.deployments[0].reason
    assert not (out / "deploy").exists()  # no package is left that results.json does not record
    report = (out / "report.md").read_text()
    assert "no package was written for it: the hand-over packages could not be written: OSError" in report
    assert_agrees(out)


def test_a_plan_run_step_by_step_took_what_its_steps_took(tmp_path, script):
    clock = Clock()
    clock.now += 300  # the TUI was open five minutes before the model was profiled
    s = new_session(clock, script)
    profile_and_plan(s)  # 10 s
    clock.now += 120  # the user reads the checklist
    s.set_out_dir(tmp_path / "run")
    script.step_s = 60.0
    s.optimize(plugins=["any"])  # 60 s
    clock.now += 200  # the user reads the results
    out = save(s)
    budget = read_results(out / "results.json").budget
    assert budget is not None
    assert (budget.spent_s, budget.steps) == (70.0, {"profile": 10.0, "optimize": 60.0, "packages": 0.0})
    report = (out / "evidence.md").read_text()  # the appendix: Time budget
    assert "the plan's steps took 70 s (profiling 10 s, optimizing 60 s, writing the hand-over packages" in report
    assert "from loading the model" not in report
