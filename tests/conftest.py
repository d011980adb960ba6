"""Shared fixtures: run the CLI in-process and capture what a user would see, and real hardware profiles."""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from planner.hardware import HardwareProfile

# Test packages have no __init__.py, so pytest puts only the test file's own folder on sys.path.
# These folders hold helpers that tests anywhere need: hardware_profiles (tests/fixtures), and the fake
# NVML module and fixture-tree paths it is built on (tests/hardware).
for _helpers in ("fixtures", "hardware"):
    _path = str(Path(__file__).resolve().parent / _helpers)
    if _path not in sys.path:
        sys.path.insert(0, _path)

# tests/targets mirrors the targets package, and pytest puts this folder on sys.path (for this conftest): where
# the repository's root is not on sys.path too (`pytest` run as a script, not `python -m pytest`), `import
# targets` found tests/targets as a namespace package, here and in the measuring workers (they inherit sys.path),
# and every plugin failed to load. With the root on the path the real package wins wherever it is listed.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in (os.path.abspath(p or ".") for p in sys.path):
    sys.path.append(_ROOT)
if "targets" in sys.modules and not getattr(sys.modules["targets"], "__file__", None):
    del sys.modules["targets"]

# A shell without job control starts a background job (`make test &`, a CI runner's script) with SIGINT ignored,
# and every process it starts inherits that: the tests that press Ctrl-C on a plan would see it do nothing. A
# handler here (not an ignore) makes the processes the tests start begin with Ctrl-C's default, as a terminal's do.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Keep measured ceilings and other caches inside the test session, not the user's home.
os.environ.setdefault("PLANNER_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "planner"))


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_finish(session):
    """Keep the cyclic garbage collector off the objects that live for the whole run.

    Collecting the tests imports PyTorch, Textual and the planner: a few hundred thousand objects that
    every full collection would scan again, dozens of times in a module of TUI tests (each Textual app
    makes many cycles). Freezing them leaves them to reference counting, and the higher thresholds make
    the full scans of what the tests create rarer. Only this pytest process changes: the measuring
    workers are fresh processes, and a test that needs garbage gone still calls gc.collect().
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked `gpu` where no CUDA device exists, saying why."""
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; torch.cuda.is_available() is False here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cli(capsys):
    """Run `planner ARGS` in-process; returns (exit status, stdout, stderr)."""
    from planner.cli import main

    def run(*args: str):
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="session")
def tiny():
    """demo:tiny (seeded random weights), loaded once: conv1 -> bn1 (foldable), conv2 of 16 channels (channels
    already multiples of 8), a 16x10 classifier.

    Shared by every test that asks for it, so nothing may change it in place: the plugins never mutate
    the loaded module, and a test that changes weights works on its own copy.
    """
    from planner.models import load_model

    return load_model("demo:tiny")


def _plan_once(tmp_path_factory, name: str, argv: list[str]) -> tuple[Path, int, str, str]:
    """Run `planner ARGV --out FOLDER` in-process once for the whole test run: (folder, exit status, stdout, stderr).

    Under pytest-xdist each worker is its own session, so a session fixture alone would run the plan once per
    worker that needs it (up to three real plans of ~30 CPU seconds for one). The first worker to ask runs it
    into the run's shared temporary folder, holding a file lock, and records what it said; the others wait on the
    lock and read that record (pytest-xdist's recipe for session fixtures that must execute only once). Without
    xdist the plan goes into this session's own temporary folder, as any session fixture's would.
    """
    import contextlib
    import io
    import json
    import shutil

    from planner.cli import main

    def run(out: Path) -> dict:
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main([*argv, "--out", str(out)])
        return {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        said = run(out)
    else:
        from filelock import FileLock

        shared = tmp_path_factory.getbasetemp().parent  # this run's folder, which every worker's basetemp is in
        out, record = shared / name, shared / f"{name}.json"
        with FileLock(str(shared / f"{name}.lock")):
            if record.is_file():
                said = json.loads(record.read_text())
            else:
                shutil.rmtree(out, ignore_errors=True)  # a worker whose plan raised may have left part of one
                out.mkdir()
                said = run(out)
                record.write_text(json.dumps(said))
    return out, said["code"], said["stdout"], said["stderr"]


@pytest.fixture(scope="session")
def tiny_plan(tmp_path_factory):
    """One real `planner plan --model demo:tiny --target cpu --quick` with ONNX Runtime and OpenVINO, its
    leaders confirmed: (output folder, exit status, stdout). Shared by every test that reads such a plan
    (results.json, the report, the CLI's words), so it is measured once per test run, whatever the number of
    xdist workers; nothing may write into its folder."""
    out, code, stdout, _ = _plan_once(tmp_path_factory, "tiny-plan", [
        "plan", "--model", "demo:tiny", "--target", "cpu", "--quick", "--plugins", "cpu.onnxruntime,cpu.openvino"])
    return out, code, stdout


def _shared_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder made once for the whole test run (the first xdist worker makes it under a file lock; the others
    wait and reuse it), or once for this session without xdist."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        make(out)
        return out
    import shutil

    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent
    out, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            make(out)
            done.write_text("ok")
    return out


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory) -> Path:
    """A tiny Llama saved as a Hugging Face folder (2 layers, hidden 64, 4 heads, 2 KV heads, a 512-token BPE
    vocabulary), trained for 150 steps on the bundled text so its distributions are peaked as a real model's (random
    weights hide what quantization does); built once per test run (~12 s); nothing may write into it."""
    from planner.llm.random_model import build_random_llm

    return _shared_once(tmp_path_factory, "tiny-llm", lambda out: build_random_llm(out, "tiny", train_steps=150)
                        and None)


@pytest.fixture(scope="session")
def tiny_llm_plan(tmp_path_factory, tiny_llm):
    """One real `planner plan --model TINY_LLM --quick` with PyTorch and OpenVINO GenAI (its INT4 and u8 KV cache
    candidates among them; ONNX Runtime GenAI's are measured by its own tests): (folder, exit status, stdout).
    Measured once per test run; nothing may write into its folder."""
    out, code, stdout, _ = _plan_once(tmp_path_factory, "tiny-llm-plan", [
        "plan", "--model", str(tiny_llm), "--quick", "--prompt-lengths", "16,64", "--new-tokens", "16",
        "--plugins", "llm.torch,llm.openvino"])
    return out, code, stdout


@pytest.fixture(scope="session")
def digits_pipeline_plan(tmp_path_factory):
    """One real `planner plan --model demo:digits --target cpu --quick --confirm 0 --no-deploy` with ONNX Runtime
    and the example request pipeline (examples/pipelines/digits.py): (output folder, exit status, stdout, stderr).

    Shared by the tests that read a digits plan: its accuracy on the demo's built-in held-out set
    (tests/pipeline/test_digits_plan.py) and its whole request timed (tests/cli/test_cli_pipeline.py), so it
    is measured once per test run, whatever the number of xdist workers; nothing may write into its folder.
    No packages: none of them reads one (tiny_plan's are read), and each would be timed again when written.
    """
    example = Path(__file__).resolve().parents[1] / "examples" / "pipelines" / "digits.py"
    return _plan_once(tmp_path_factory, "digits-pipeline", [
        "plan", "--model", "demo:digits", "--target", "cpu", "--quick", "--confirm", "0", "--no-deploy",
        "--plugins", "cpu.onnxruntime", "--trust-code", "--pipeline", f"{example}:preprocess,postprocess"])


@pytest.fixture
def hardware_profile() -> Callable[..., HardwareProfile]:
    """A factory for real profiles detected from a fixture tree: hardware_profile('rpi4', gpus=(a100(),))."""
    from hardware_profiles import fixture_profile  # imported here: its folder joins sys.path above

    return fixture_profile
