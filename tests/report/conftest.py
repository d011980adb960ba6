"""Fixtures for the report tests: the hand-written results.json and fixed figure links."""

from __future__ import annotations

import copy
import json

import pytest
from report_fixtures import FIXED_BATCH, FIXTURES, SEQUENCE_SWEEP, TEXT_FLAGS, TEXT_INPUTS


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


@pytest.fixture
def text_results(fixture_results: dict) -> dict:
    """The fixture run as if its model were a two-input text model with a fixed batch (as a static ONNX file is).

    Only what depends on the inputs changes: the model and baseline records of them, the sweeps
    (no batch sweep; a sequence sweep instead) and the reproduce commands.
    """
    r = copy.deepcopy(fixture_results)
    r["model"] = {**{k: v for k, v in r["model"].items() if k != "input"}, "source": "bert.onnx", "kind": "onnx",
                  "name": "bert", "inputs": copy.deepcopy(TEXT_INPUTS), "dynamic_batch": False}
    b = r["baseline"]
    b["input_shape"] = [1, 64]
    b["inputs"] = copy.deepcopy(TEXT_INPUTS)
    b["sequence_sweep"] = copy.deepcopy(SEQUENCE_SWEEP)
    b["throughput"] = [{"batch": 1, "latency_p50_ms": 0.66812, "samples_per_s": 1496.7, "peak_memory_bytes": None}]
    b["knee_batch"] = None
    b["info"] = {**b["info"], "sweep_skipped": FIXED_BATCH}
    for c in r["candidates"]:
        c["reproduce"] = c["reproduce"].replace("--model demo:inefficient --input-shape 1x3x224x224",
                                                f"--model bert.onnx {TEXT_FLAGS}")
        c["info"] = {k: v for k, v in (c.get("info") or {}).items() if k != "sweep_stopped"}
        if c.get("latency_ms"):
            c["throughput"] = c["throughput"][:1]
            c["knee_batch"] = None
            c["info"]["sweep_skipped"] = FIXED_BATCH
            # Each candidate's sequence sweep scales with its own p50 against the baseline's.
            scale = c["latency_ms"]["p50_ms"] / fixture_results["baseline"]["latency_ms"]["p50_ms"]
            c["sequence_sweep"] = [{**p, "latency_p50_ms": p["latency_p50_ms"] * scale,
                                    "tokens_per_s": p["tokens_per_s"] / scale} for p in SEQUENCE_SWEEP]
    b["reproduce"] = r["candidates"][0]["reproduce"]
    return r
