"""A package's run.py takes the planner's `--pipeline` hook: it times the user's whole request with the package's
own runtime and prints the same split, with every planner import refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

# Runs run.py with arguments, every planner import refused: the package cannot lean on the planner.
WITHOUT_PLANNER = ("import runpy, sys; sys.modules['planner'] = None; sys.modules['targets'] = None; "
                   "sys.argv = ['run.py', *sys.argv[1:]]; runpy.run_path('run.py', run_name='__main__')")

PIPELINE = '''
import numpy as np

SAMPLES = [np.full((3, 32, 32), i * 40, dtype=np.uint8) for i in range(4)]


def decode(raw):
    return raw.astype(np.float32) / 255.0


def top1(output):
    return int(output.argmax())


def wrong_dtype(raw):
    return raw.astype(np.float64)
'''


def _run(folder, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-c", WITHOUT_PLANNER, *args], cwd=folder, capture_output=True,
                          text=True, timeout=180)


@pytest.mark.worker
def test_run_py_times_a_request_end_to_end_without_the_planner(written_plan, tmp_path) -> None:
    out, _ = written_plan
    package = shutil.copytree(out / "deploy" / "winner", tmp_path / "elsewhere")
    (tmp_path / "serve.py").write_text(textwrap.dedent(PIPELINE))
    done = _run(package, "--pipeline", str(tmp_path / "serve.py") + ":decode,top1", "--requests", "20")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("model ") and "of the request, preprocessing " in lines[0]
    assert ", postprocessing " in lines[0]
    assert lines[1].startswith("median per request: preprocessing ") and "whole request" in lines[1]
    assert lines[2] == "20 requests over 4 distinct samples (SAMPLES in serve.py)"
    assert lines[3].startswith("the bottleneck: ")
    # A bad pipeline is the same clear error the planner gives, and a failing exit status.
    bad = _run(package, "--pipeline", str(tmp_path / "serve.py") + ":wrong_dtype")
    assert bad.returncode == 2
    assert "error: wrong_dtype returned float64, and the model takes float32" in bad.stderr
    assert "fix: return x.astype(numpy.float32)" in bad.stderr
    # Without --pipeline it does what it always did.
    plain = _run(package)
    assert plain.returncode == 0 and plain.stdout.count("output shape (1, 10)") == 4
