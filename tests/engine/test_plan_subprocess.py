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

# As the session's shared in-process plan (tests/conftest.py `tiny_plan`), so only the subprocess run is measured here.
PLAN = ["plan", "--model", "demo:tiny", "--target", "cpu", "--quick", "--plugins", "cpu.onnxruntime,cpu.openvino"]


def _shape(results: dict) -> dict:
    """What a plan decided, without what it measured: the parts two runs of the same plan share."""
    return {
        "keys": sorted(results),
        "status": results["status"],
        "model": results["model"]["name"],
        "target": results["target"],
        "candidates": [(c["plugin"], c["label"]) for c in results["candidates"]],
        "checklist": [item["id"] for item in results["checklist"]],
        # The plan's steps follow measured facts (the batch the throughput stops growing at, the bound), which two
        # runs on a busy machine may read differently: what both must share is the shape of a step, not its pick.
        "plan": sorted({key for step in results["plan"]["steps"] for key in step}),
        "skipped_plugins": [s["plugin"] for s in results["skipped_plugins"]],
    }


def test_the_engine_subprocess_writes_the_same_results_as_in_process(tmp_path, tiny_plan):
    inprocess_out, code, _ = tiny_plan
    assert code == 0
    wrapper = tmp_path / "engine_wrapper.py"
    wrapper.write_text(ENGINE_WRAPPER)
    out = tmp_path / "subprocess"
    # The engine command (PLANNER_ENGINE_COMMAND) leaves a mark, so the test knows the run started one.
    marker = tmp_path / "engine-started"
    env = {**os.environ, "PLANNER_ENGINE_COMMAND": shlex.join([sys.executable, str(wrapper), str(marker)])}
    process = subprocess.run([sys.executable, "-m", "planner.cli", *PLAN, "--out", str(out), "--engine", "subprocess"],
                             env=env, capture_output=True, text=True, timeout=280)
    assert process.returncode == 0, f"--engine subprocess:\n{process.stderr[-3000:]}"
    assert "Traceback" not in process.stderr
    assert marker.is_file()
    assert str(out) in process.stdout + process.stderr  # it says where it wrote
    assert (out / "report.md").is_file()
    read_results(out / RESULTS_NAME)  # it reads back as typed results
    shapes = {where: _shape(json.loads((folder / RESULTS_NAME).read_text()))
              for where, folder in (("subprocess", out), ("inprocess", inprocess_out))}
    assert shapes["subprocess"] == shapes["inprocess"]
    assert shapes["inprocess"]["status"] == "ok"
    assert {plugin for plugin, _ in shapes["inprocess"]["candidates"]} >= {"cpu.onnxruntime", "cpu.openvino"}
