"""Fixtures for the report tests: the hand-written results.json and fixed figure links."""

from __future__ import annotations

import copy
import json

import pytest
from report_fixtures import FIXTURES


@pytest.fixture(scope="session")
def fixture_results() -> dict:
    """The fixture results.json, read once."""
    return json.loads((FIXTURES / "results.json").read_text())


@pytest.fixture
def results(fixture_results: dict) -> dict:
    """A private copy of the fixture results that a test may modify."""
    return copy.deepcopy(fixture_results)


@pytest.fixture
def partial_results(fixture_results: dict) -> dict:
    """What results.json holds when a run is interrupted right after the baseline."""
    r = fixture_results
    baseline = copy.deepcopy(r["baseline"])
    baseline["ceilings"] = copy.deepcopy(r["ceilings"])
    return {"schema_version": r["schema_version"], "status": "interrupted",
            "planner_version": r["planner_version"], "target": r["target"], "quick": r["quick"],
            "warnings": ["interrupted by Ctrl-C: the results hold what was measured"],
            "model": copy.deepcopy(r["model"]), "hardware": copy.deepcopy(r["hardware"]),
            "baseline": baseline}
