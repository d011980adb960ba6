"""What a plan decided, as PlanResults holds it (planner.results.decisions): typed, and written to results.json
exactly as the advice objects' hand-written JSON was before it was typed; older files still load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_catalog import CATALOG

from planner.advice import Answer, DecisionPath, Plan, RecommendedAction, answer_checklist, defaults_for, make_plan
from planner.codec import from_data, to_data
from planner.measure.stats import compute_stats
from planner.results import (
    AnswerRecord,
    CandidateResult,
    DecisionPathRecord,
    PlanRecord,
    PlanResults,
    RequirementCheck,
    Requirements,
    Status,
    rank_candidates,
    read_results,
    results_data,
    write_results,
)
from planner.results.schema import upgrade
from planner.results.values import ThroughputPoint

REPO = Path(__file__).resolve().parents[2]
OLDER_FILES = [REPO / "tests" / "report" / "fixtures" / "results.json",  # schema 1, a plan without its checklist
               REPO / "tests" / "tui" / "fixtures" / "results.json",  # schema 1
               REPO / "tests" / "fixtures" / "recorded" / "inefficient-quick.json"]  # schema 2
DECISIONS = ("requirements", "checklist", "decision_path", "plan", "requirement_checks",
             "requirement_checks_baseline")


# The JSON the advice objects wrote before results held them typed, spelled out as their to_dict() was:
# the records must keep every key, value and order.
def _answer_before(a: Answer) -> dict[str, Any]:
    return {"id": a.question.id, "group": str(a.question.group), "question": a.question.text,
            "hint": a.question.hint, "answered_by": a.question.answered_by, "answer": a.answer,
            "evidence": a.evidence, "status": str(a.status), "prompt": a.prompt, "value": a.value}


def _action_before(r: RecommendedAction) -> dict[str, Any]:
    return {"action": r.action.id, "title": r.title, "plugins": list(r.plugins), "node": r.node_id,
            "node_text": r.node_text, "evidence": r.evidence, "options": dict(r.options),
            "fidelity_gated": r.fidelity_gated, "when": r.when}


def _path_before(p: DecisionPath) -> dict[str, Any]:
    return {"target": p.target, "visited": [to_data(v) for v in p.visited],
            "actions": [_action_before(a) for a in p.actions]}


def _plan_before(p: Plan) -> dict[str, Any]:
    return {"schema": 1, "target": p.target, "requirements_met": p.requirements_met, "summary": p.summary,
            "steps": [to_data(s) for s in p.steps], "notes": list(p.notes), "checks": [to_data(c) for c in p.checks],
            "requirements": to_data(p.requirements) if p.requirements else None,
            "checklist": [_answer_before(a) for a in p.answers],
            "decision_path": _path_before(p.path) if p.path else None}


def _json(value: Any) -> Any:
    """As it reads back from a file (tuples become lists)."""
    return json.loads(json.dumps(value))


@pytest.fixture
def decided(cpu_server, make_baseline) -> PlanResults:
    """Results holding a CPU plan's decisions, as the session stores them."""
    req = defaults_for("cpu_server")
    base = make_baseline(p50=120.0)
    answers = answer_checklist("cpu", cpu_server, base, requirements=req)
    plan = make_plan(target="cpu", hw=cpu_server, baseline=base, requirements=req, answers=answers, catalog=CATALOG)
    assert plan.path is not None and plan.path.actions and plan.checks  # every part has something to compare
    return PlanResults(requirements=req, checklist=tuple(a.record() for a in plan.answers),
                       decision_path=plan.path.record(), plan=plan.record(), requirement_checks=plan.checks,
                       requirement_checks_subject="torch", requirement_checks_baseline=plan.checks)


def test_results_json_holds_the_decisions_as_before_they_were_typed(decided, cpu_server, make_baseline):
    req = defaults_for("cpu_server")
    base = make_baseline(p50=120.0)
    answers = answer_checklist("cpu", cpu_server, base, requirements=req)
    plan = make_plan(target="cpu", hw=cpu_server, baseline=base, requirements=req, answers=answers, catalog=CATALOG)
    assert plan.path is not None
    data = results_data(decided)
    assert data["requirements"] == _json(to_data(req))
    assert data["checklist"] == _json([_answer_before(a) for a in plan.answers])
    assert data["decision_path"] == _json(_path_before(plan.path))
    assert data["plan"] == _json(_plan_before(plan))
    assert list(data["plan"]) == list(_plan_before(plan))  # the same keys in the same order
    assert [list(a) for a in data["decision_path"]["actions"]] == [list(_action_before(a)) for a in plan.path.actions]
    assert data["requirement_checks"] == data["requirement_checks_baseline"] == _json([to_data(c) for c in plan.checks])
    # The advice objects' JSON is their record's.
    assert _json(to_data(plan.record())) == _json(_plan_before(plan))


def test_decisions_are_typed_and_round_trip_through_results_json(decided, tmp_path):
    assert isinstance(decided.requirements, Requirements) and isinstance(decided.plan, PlanRecord)
    assert isinstance(decided.decision_path, DecisionPathRecord)
    assert all(isinstance(a, AnswerRecord) for a in decided.checklist)
    assert all(isinstance(c, RequirementCheck) for c in decided.requirement_checks)
    write_results(tmp_path / "results.json", decided)
    assert read_results(tmp_path / "results.json") == decided


def test_decisions_not_made_are_written_as_before():
    data = results_data(PlanResults())
    # Requirements, the decision path and the plan were `{}` before there were any; the lists were empty.
    assert data["requirements"] == data["decision_path"] == data["plan"] == {}
    assert data["checklist"] == data["requirement_checks"] == data["requirement_checks_baseline"] == []


@pytest.mark.parametrize("path", OLDER_FILES, ids=lambda p: p.parent.name)
def test_older_files_load_with_typed_decisions_and_write_them_back_unchanged(path):
    results = read_results(path)
    raw = upgrade(json.loads(path.read_text()))  # upgraded: schema 2's one `plugin` is `plugins`
    assert isinstance(results.requirements, Requirements) and isinstance(results.plan, PlanRecord)
    assert results.plan.steps and results.checklist and results.decision_path is not None
    assert results.requirements.latency_ms == raw["requirements"]["latency_ms"]
    data = results_data(results)
    for key in DECISIONS:  # a key the file lacks (added later) stays out of it
        assert data.get(key) == raw.get(key), key


def test_ranking_reads_typed_requirements_as_their_json():
    def cand(label: str, p50: float, rate: float) -> CandidateResult:
        return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                               latency_ms=compute_stats([p50] * 20), throughput=(ThroughputPoint(8, p50, rate, None),))

    fast, wide = cand("fast", 1.0, 1000.0), cand("wide", 2.0, 4000.0)
    stated = Requirements(latency_ms=50.0, min_throughput=100.0,
                          sources={"min_throughput": "flag", "latency_ms": "default for Server"})
    assert rank_candidates([fast, wide], stated) == rank_candidates([fast, wide], to_data(stated))
    assert rank_candidates([fast, wide], stated).order == (1, 0)  # a stated rate outranks a default latency
    assert from_data(to_data(stated), Requirements) == stated
