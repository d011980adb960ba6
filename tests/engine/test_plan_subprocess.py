"""`planner plan --engine subprocess` (planner/engine/plan.py) writes the results.json the in-process plan writes:
the same fields, status, candidates, checklist and plan; only the measured figures differ."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from planner.results import RESULTS_NAME, read_results

pytestmark = pytest.mark.worker  # two real plans of demo:tiny, each measuring in worker processes

ENGINE_WRAPPER = """
import os, sys
with open(sys.argv[1], "w") as marker:  # this run started an engine process
    marker.write(str(os.getpid()))
os.execv(sys.executable, [sys.executable, "-m", "planner.cli", "engine"])
"""

PLAN = ["plan", "--model", "demo:tiny", "--target", "cpu", "--quick", "--plugins", "cpu.onnxruntime"]


def _shape(results: dict) -> dict:
    """What a plan decided, without what it measured: the parts two runs of the same plan share."""
    return {
        "keys": sorted(results),
        "status": results["status"],
        "model": results["model"]["name"],
        "target": results["target"],
        "candidates": [(c["plugin"], c["label"]) for c in results["candidates"]],
        "checklist": [item["id"] for item in results["checklist"]],
        "plan": [(step["title"], step["plugins"], step["kind"]) for step in results["plan"]["steps"]],
        "skipped_plugins": [s["plugin"] for s in results["skipped_plugins"]],
    }


def test_the_engine_subprocess_writes_the_same_results_as_in_process(tmp_path):
    wrapper = tmp_path / "engine_wrapper.py"
    wrapper.write_text(ENGINE_WRAPPER)
    runs = {}
    # Both at once: the comparison is of what each decided, never of timings.
    for engine in ("inprocess", "subprocess"):
        out = tmp_path / engine
        # The engine command (PLANNER_ENGINE_COMMAND) leaves a mark, so the test knows which run started one.
        env = {**os.environ, "PLANNER_ENGINE_COMMAND": shlex.join([sys.executable, str(wrapper),
                                                                   str(tmp_path / f"{engine}.engine-started")])}
        runs[engine] = (out, subprocess.Popen([sys.executable, "-m", "planner.cli", *PLAN, "--out", str(out),
                                               "--engine", engine], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    shapes = {}
    for engine, (out, process) in runs.items():
        stdout, stderr = process.communicate(timeout=280)
        assert process.returncode == 0, f"--engine {engine}:\n{stderr[-3000:]}"
        assert "Traceback" not in stderr
        results = json.loads((out / RESULTS_NAME).read_text())
        read_results(out / RESULTS_NAME)  # and it reads back as typed results
        assert (out / "report.md").is_file()
        shapes[engine] = _shape(results)
        assert str(out) in stdout + stderr  # each says where it wrote
    assert (tmp_path / "subprocess.engine-started").is_file()
    assert not (tmp_path / "inprocess.engine-started").exists()
    assert shapes["subprocess"] == shapes["inprocess"]
    assert shapes["inprocess"]["status"] == "ok"
    assert any(plugin == "cpu.onnxruntime" for plugin, _ in shapes["inprocess"]["candidates"])
