"""`python run.py --check`: a package proves itself without the planner. Its files against the manifest, its outputs
on the stored samples against the original's by the manifest's rule, its timing as benchmark_app reports it;
`--threads N` runs with another thread count and says so."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from planner.deploy.manifest import sha256_of

# Runs run.py with arguments, every planner import refused: the package cannot lean on the planner.
WITHOUT_PLANNER = ("import runpy, sys; sys.modules['planner'] = None; sys.modules['targets'] = None; "
                   "sys.argv = ['run.py', *sys.argv[1:]]; runpy.run_path('run.py', run_name='__main__')")


def _run(folder, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """run.py of the package in `folder` with `args`, from `cwd` (default: the folder itself)."""
    script = WITHOUT_PLANNER.replace("'run.py'", repr(str(folder / "run.py")))
    return subprocess.run([sys.executable, "-I", "-c", script, *args], cwd=cwd or folder, capture_output=True,
                          text=True, timeout=180)


@pytest.fixture
def package(written_plan, tmp_path):
    """The measured ONNX Runtime winner, copied away from the plan (one thread, as measured)."""
    out, _ = written_plan
    return shutil.copytree(out / "deploy" / "winner", tmp_path / "copied")


def _lines(done: subprocess.CompletedProcess, start: str) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith(start)]


@pytest.mark.worker
def test_check_passes_and_reports_timing_like_benchmark_app_from_any_folder(package, tmp_path):
    done = _run(package, "--check", "--seconds", "0.3", cwd=tmp_path)  # run from another folder
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "onnxruntime all seq 1t (onnxruntime), threads 1, as the plan measured"
    assert _lines(done, "files     pass  all 5 files match the SHA-256 in manifest.json")
    for start in ("load and compile ", "first inference ", "median (p50) ", "p90 ", "throughput "):
        assert len(_lines(done, start)) == 1, done.stdout
    [fidelity] = _lines(done, "fidelity  ")
    assert fidelity.startswith("fidelity  pass  cosine similarity") and "the plan's fp32 rule" in fidelity
    assert "on the 4 sample inputs against the original model's outputs" in fidelity
    # The latency verdict depends on the machine's load; that it compared with the recorded p50 does not.
    [latency] = _lines(done, "latency   ")
    assert " recorded (" in latency and ("within 10%" in latency or "outside 10%" in latency)
    assert done.stdout.splitlines()[-1].startswith("passed: ")


def _corrupt_reference(folder, *, rehash: bool) -> None:
    """Scale the first sample's stored reference output, as a package whose outputs went wrong would read; with
    `rehash`, record the new file's SHA-256 too, so only the fidelity check can catch it."""
    with np.load(folder / "samples.npz") as data:
        arrays = {key: data[key] for key in data.files}
    arrays["reference/0"] = arrays["reference/0"] * -3.0
    with open(folder / "samples.npz", "wb") as fh:
        np.savez(fh, **arrays)
    if rehash:
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"]["samples.npz"] = sha256_of(folder / "samples.npz")
        (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.worker
def test_outputs_that_miss_the_reference_fail_the_check_with_a_non_zero_exit(package):
    _corrupt_reference(package, rehash=True)
    done = _run(package, "--check", "--seconds", "0.2")
    assert done.returncode == 1
    [fidelity] = _lines(done, "fidelity  ")
    assert fidelity.startswith("fidelity  fail  cosine similarity") and "< gate 0.9999" in fidelity
    assert done.stdout.splitlines()[-1] == "FAILED: the outputs fail the plan's fidelity rule"


def test_a_changed_file_fails_the_check_before_anything_runs(package):
    _corrupt_reference(package, rehash=False)
    done = _run(package, "--check")
    assert done.returncode == 1
    assert done.stdout.splitlines()[1] == ("files     fail  samples.npz was changed after the plan wrote it (its "
                                           "SHA-256 differs from manifest.json)")
    assert not _lines(done, "fidelity")


@pytest.mark.worker
def test_threads_override_the_plan_and_say_so(package):
    plain = _run(package, "--threads", "3")
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert plain.stdout.splitlines()[0] == "threads 3 (the plan measured 1)"
    assert plain.stdout.count("output shape (1, 10)") == 4
    assert plain.stdout.splitlines()[-1].startswith("ran the 4 sample inputs of samples.npz and compared nothing: "
                                                    "python run.py --check compares")
    checked = _run(package, "--check", "--threads", "2", "--seconds", "0.2")
    assert checked.returncode == 0, checked.stdout + checked.stderr[-2000:]
    assert checked.stdout.splitlines()[0].endswith("threads 2 (the plan measured 1)")
    [latency] = _lines(checked, "latency   ")
    assert latency.startswith("latency   not compared") and "with 2 threads" in latency
    bad = _run(package, "--threads", "0")
    assert bad.returncode == 2 and "--threads takes a count of 1 or more" in bad.stderr
