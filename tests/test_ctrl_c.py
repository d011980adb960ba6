"""Ctrl-C half way through `planner plan`: exit 130, results.json and a partial report kept."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.worker  # a real `planner plan` process and its measuring workers

CANDIDATE_OK = re.compile(r"\d+/\d+ ok +(onnxruntime|openvino)")
"""A measured candidate's progress line: its count, its status, then its label."""


def test_ctrl_c_keeps_what_was_measured(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner.cli", "plan", "--model", "demo:tiny", "--target", "cpu",
         "--quick", "--plugins", "cpu.onnxruntime,cpu.openvino", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        # A background shell may have left SIGINT ignored; a user's terminal would not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    seen = ""
    while time.time() < deadline:
        line = proc.stderr.readline()
        seen += line
        if not line and proc.poll() is not None:
            break  # the plan ended without measuring it: the assert below shows what it printed
        if CANDIDATE_OK.search(line):  # a candidate's result line: status, then its label
            break
    assert CANDIDATE_OK.search(seen), seen
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "interrupted"
    # The candidate measured before Ctrl-C is kept (which one the search screens first depends on the machine).
    assert any(c["plugin"] in ("cpu.onnxruntime", "cpu.openvino") and c["status"] == "ok"
               for c in results["candidates"])
    assert "Partial report" in (out / "report.md").read_text()
