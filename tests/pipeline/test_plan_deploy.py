"""A plan ends by writing its hand-over packages: deploy/ holds the winner, and results.json says so."""

from __future__ import annotations

import json

import pytest

from planner.pipeline import PlanOptions, run_plan


@pytest.mark.worker
def test_a_plan_writes_the_winners_package_and_records_it(tmp_path):
    outcome = run_plan(PlanOptions(model="demo:tiny", target="cpu", quick=True, plugins=("cpu.onnxruntime",),
                                   confirm=0, out=tmp_path))
    results = outcome.results
    best = results.best
    assert best is not None
    winner = results.deployments[0]
    assert (winner.role, winner.label, winner.folder) == ("winner", best.label, "deploy/winner")
    manifest = json.loads((tmp_path / "deploy" / "winner" / "manifest.json").read_text())
    assert manifest["candidate"]["label"] == best.label
    assert manifest["measured"]["p50_ms"] == pytest.approx(best.p50)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["deployments"][0]["folder"] == "deploy/winner"
    assert not any("hand-over package" in w for w in results.warnings)
