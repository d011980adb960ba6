"""A plan ends by writing its hand-over packages: deploy/ holds the winner, and results.json says so."""

from __future__ import annotations

import json

import pytest

from planner.results import read_results


@pytest.mark.worker
def test_a_plan_writes_the_winners_package_and_records_it(tiny_plan):
    # The session's shared quick plan of demo:tiny (tests/conftest.py): every plan writes its packages.
    out, code, stdout = tiny_plan
    assert code == 0, stdout
    results = read_results(out / "results.json")
    best = results.best
    assert best is not None
    winner = results.deployments[0]
    assert (winner.role, winner.label, winner.folder) == ("winner", best.label, "deploy/winner")
    manifest = json.loads((out / "deploy" / "winner" / "manifest.json").read_text())
    assert manifest["candidate"]["label"] == best.label
    assert manifest["measured"]["p50_ms"] == pytest.approx(best.p50)
    saved = json.loads((out / "results.json").read_text())
    assert saved["deployments"][0]["folder"] == "deploy/winner"
    assert not any("hand-over package" in w for w in results.warnings)
