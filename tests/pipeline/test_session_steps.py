"""The session's step graph: what a change of model, inputs, target or requirements makes out of date,
declared once in planner/pipeline/steps.py and applied by every setter of PlanSession."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planner.pipeline import PlanSession
from planner.pipeline.steps import CHANGES, DISCARDS, MADE_FROM, Change, Fate, Step, invalidated_by
from planner.results import CandidateResult, SkippedPlugin, Status


def _cand(label: str) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           speedup=1.0)


class _Model:
    """Stands in for a LoadedModel: what the session reads of it."""

    def __init__(self, source: str) -> None:
        self.name = source.split(":")[-1]
        self.source = SimpleNamespace(text=source)

    def describe(self) -> dict:
        return {"name": self.name, "source": self.source.text}


@pytest.fixture
def session(hardware_profile, monkeypatch) -> PlanSession:
    """A session on a fixture machine where every step has run: model, baseline, replies, plan, candidates, report."""
    import planner.models

    monkeypatch.setattr(planner.models, "load_model", lambda source, **_: _Model(source))
    s = PlanSession()
    s.hw = hardware_profile("xeon_sapphire_rapids")
    s.done(Step.HARDWARE)
    s.load("demo:one")
    s.set_target("cpu")
    s.set_requirements()
    s.warn("a warning from the profile")
    s.baseline, s.reference = object(), []  # type: ignore[assignment]
    s.done(Step.PROFILE)
    s.update(candidates=(_cand("baseline"),))
    s.replies = {"q": "no"}
    s.done(Step.CHECKLIST)
    s.plan = object()  # type: ignore[assignment]
    s.done(Step.PLAN)
    _optimize(s)
    s.done(Step.REPORT)
    assert s.done_steps() == set(Step) and not s.stale_steps()
    return s


def _optimize(s: PlanSession) -> None:
    """What an optimize run records, as PlanSession.optimize does it."""
    s.discard(Step.OPTIMIZE)
    s.warn("a warning from the run")
    s.skip_plugin("cpu.other", ["not here"])
    s.add_candidate(_cand("candidate"))
    s.done(Step.OPTIMIZE)


def test_the_graph_is_declared_in_step_order_and_every_change_names_a_step():
    order = list(Step)
    for step, sources in MADE_FROM.items():
        assert all(order.index(source) < order.index(step) for source in sources), step
    assert all(step in MADE_FROM[later] for step, later in DISCARDS)
    assert set(CHANGES) == set(Change)


def test_what_each_change_invalidates():
    stale = {Step.PLAN: Fate.STALE, Step.OPTIMIZE: Fate.STALE, Step.REPORT: Fate.STALE}
    assert invalidated_by(Change.TARGET) == invalidated_by(Change.REQUIREMENTS) == stale
    everything = {s: Fate.DISCARDED for s in (Step.PROFILE, Step.CHECKLIST, Step.PLAN, Step.OPTIMIZE, Step.REPORT)}
    assert invalidated_by(Change.MODEL) == invalidated_by(Change.INPUTS) == everything


def test_a_new_target_keeps_the_baseline_and_the_candidates_but_the_plan_and_what_follows_are_stale(session):
    baseline, candidates = session.baseline, session.results.candidates
    session.set_target("edge")
    assert session.stale_steps() == {Step.PLAN, Step.OPTIMIZE, Step.REPORT}
    assert {Step.PROFILE, Step.CHECKLIST, Step.TARGET} <= session.done_steps()
    assert session.baseline is baseline and session.results.candidates == candidates
    assert session.plan is not None and session.replies == {"q": "no"}


def test_other_requirements_make_the_plan_stale_and_the_same_ones_again_change_nothing(session):
    session.set_requirements()
    session.set_target("cpu")
    assert session.done_steps() == set(Step) and not session.stale_steps()
    session.set_requirements(overrides={"latency_ms": "5"})
    assert session.stale_steps() == {Step.PLAN, Step.OPTIMIZE, Step.REPORT}


def test_another_model_discards_everything_measured_for_the_previous_one(session, tmp_path):
    session.set_out_dir(tmp_path / "out")
    session.load("demo:two")
    assert session.done_steps() == {Step.HARDWARE, Step.MODEL, Step.TARGET, Step.REQUIREMENTS}
    assert not session.stale_steps()
    assert session.baseline is None and session.plan is None and session.replies == {}
    assert session.results.candidates == () and session.results.skipped_plugins == ()
    assert session.results.baseline is None and session.results.plan is None
    assert session.out_dir is None  # the next save chooses a folder for the new model
    assert session.results.model is not None and session.results.model.source == "demo:two"


def test_the_same_model_loaded_again_is_a_change_of_inputs(session, monkeypatch):
    changes = []
    invalidate = session.invalidate
    monkeypatch.setattr(session, "invalidate", lambda change: changes.append(change) or invalidate(change))
    session.load("demo:one")
    session.load("demo:two")
    assert changes == [Change.INPUTS, Change.MODEL]
    assert session.baseline is None and Step.PROFILE not in session.done_steps()


def test_a_new_optimize_run_replaces_the_last_runs_candidates_and_its_own_warnings(session):
    _optimize(session)
    assert [c.label for c in session.results.candidates] == ["baseline", "candidate"]
    assert session.results.warnings == ("a warning from the profile", "a warning from the run")
    assert session.results.skipped_plugins == (SkippedPlugin("cpu.other", ("not here",)),)
    session.discard(Step.OPTIMIZE)
    assert [c.label for c in session.results.candidates] == ["baseline"]
    assert session.results.warnings == ("a warning from the profile",)
    assert Step.OPTIMIZE not in session.done_steps() and Step.REPORT not in session.done_steps()


def test_a_new_baseline_discards_the_candidates_and_makes_the_plan_stale(session):
    session.done(Step.PROFILE)
    assert session.stale_steps() == {Step.PLAN}
    assert Step.OPTIMIZE not in session.done_steps() and Step.REPORT not in session.done_steps()
    assert [c.label for c in session.results.candidates] == ["baseline"]
    assert session.results.warnings == ("a warning from the profile",)


def test_user_replies_mark_the_checklist_done_and_stay_for_later_plans(session, monkeypatch):
    import planner.advice as advice
    import planner.plugins
    from planner.results import DecisionPathRecord, PlanRecord

    plan = SimpleNamespace(record=PlanRecord)  # the session stores the plan's record (a default one here)
    monkeypatch.setattr(session, "baseline_facts", lambda: {})
    monkeypatch.setattr(advice, "answer_checklist", lambda *a, **k: [])
    monkeypatch.setattr(advice, "evaluate_tree", lambda *a, **k: SimpleNamespace(record=DecisionPathRecord))
    monkeypatch.setattr(advice, "make_plan", lambda **k: plan)
    monkeypatch.setattr(planner.plugins, "catalog", lambda: None, raising=False)
    session.load("demo:two")
    session.baseline = object()
    session.done(Step.PROFILE)
    session.decide()
    assert Step.PLAN in session.done_steps() and Step.CHECKLIST not in session.done_steps()
    session.decide(replies={"q": "yes"})
    assert {Step.PLAN, Step.CHECKLIST} <= session.done_steps() and session.replies == {"q": "yes"}
    session.set_target("edge")
    session.decide()  # a re-plan keeps the user's replies
    assert session.replies == {"q": "yes"} and not session.stale_steps()


def test_plugin_status_marks_the_baseline_plugin(session, monkeypatch):
    import planner.plugins

    def plugin(is_baseline: bool | None) -> SimpleNamespace:
        made = SimpleNamespace(target="cpu", summary="", check=lambda hw, model: [])
        if is_baseline is not None:
            made.is_baseline = is_baseline
        return made

    plugins = {"runs.as.is": plugin(True), "faster": plugin(False), "older": plugin(None)}
    issues = [SimpleNamespace(name="broken", reason="cannot import it")]
    monkeypatch.setattr(planner.plugins, "discover", lambda: (plugins, issues))
    monkeypatch.setattr(session, "planned_plugins", lambda: ["faster"])
    rows = {row["plugin"]: row for row in session.plugin_status()}
    assert {name: row["baseline"] for name, row in rows.items()} == {
        "runs.as.is": True, "faster": False, "older": False, "broken": False}
