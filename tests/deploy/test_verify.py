"""`planner verify`'s checks: files against the manifest, the runtime, then fidelity and latency from run.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deploy_support import ranked, stated_result

from planner.deploy import verify_path, write_deployments
from planner.deploy.verify import FIDELITY, FILES, LATENCY, RUNTIME
from planner.errors import PlannerError
from planner.plugins import ModelRef, Plugin
from planner.plugins.packaging import PackageFiles


@pytest.fixture
def package(tmp_path, tiny, ort_spec, samples) -> Path:
    """A freshly written ONNX Runtime package (stated figures: these tests stop before anything is timed)."""
    write_deployments(ranked(stated_result(ort_spec, p50_ms=0.02)), model=ModelRef.of(tiny), feeds=samples[0],
                      reference=samples[1], out_dir=tmp_path)
    return tmp_path / "deploy" / "winner"


@pytest.mark.worker
def test_a_written_package_passes_files_runtime_and_fidelity_and_reports_its_latency(written_plan):
    out, _ = written_plan
    [verdict] = verify_path(out / "deploy")
    assert verdict.folder.name == "winner" and verdict.runtime == "onnxruntime"
    assert [c.name for c in verdict.checks] == [FILES, RUNTIME, FIDELITY, LATENCY]
    assert all(c.passed for c in verdict.checks[:3]), verdict.checks
    assert verdict.fidelity is not None and verdict.fidelity["cosine"] > 0.9999
    # The latency check's verdict depends on the machine's load; that it compared both figures does not.
    latency = verdict.check(LATENCY)
    assert latency is not None and "recorded" in latency.detail
    assert verdict.p50_ms is not None and verdict.recorded_p50_ms is not None


def test_an_edited_file_is_named_and_nothing_runs(package):
    with open(package / "run.py", "a") as fh:
        fh.write("\n# changed on the server\n")
    [verdict] = verify_path(package)
    files = verdict.check(FILES)
    assert files is not None and not files.passed and not verdict.passed
    assert "run.py was changed after the plan wrote it" in files.detail
    assert verdict.check(FIDELITY) is None and verdict.check(LATENCY) is None


def test_a_missing_and_a_foreign_file_are_named(package):
    (package / "tiny.onnx").unlink()
    (package / "notes.txt").write_text("mine")
    [verdict] = verify_path(package.parent)
    assert verdict.problems == ("tiny.onnx is missing",
                                "notes.txt is not part of the package (manifest.json does not list it)")


class AbsentRuntime(Plugin):
    """A runtime that is not installed on this machine: its run.py imports a module that does not exist."""

    name = "test.absent_runtime"

    def package(self, spec, model, dest):
        """A one-line runner for a runtime nobody has installed."""
        return PackageFiles(files=(), run_py="import planner_test_absent_runtime\n", runtime="absent runtime",
                            requirements=("planner-test-absent-runtime", "numpy"),
                            imports=("planner_test_absent_runtime", "numpy"))


def test_a_runtime_that_is_not_installed_gives_the_install_command(tmp_path, tiny, ort_spec, samples):
    import dataclasses

    spec = dataclasses.replace(ort_spec, plugin=AbsentRuntime.name, label="absent runtime")
    write_deployments(ranked(stated_result(spec, p50_ms=0.02)), model=ModelRef.of(tiny), feeds=samples[0],
                      reference=samples[1], out_dir=tmp_path, find_plugin=lambda name: AbsentRuntime())
    package = tmp_path / "deploy" / "winner"
    [verdict] = verify_path(package)
    runtime = verdict.check(RUNTIME)
    assert runtime is not None and not runtime.passed and not verdict.passed
    assert "planner_test_absent_runtime not installed here" in runtime.detail
    assert f"pip install -r {package.resolve() / 'requirements.txt'}" in runtime.detail
    assert "planner-test-absent-runtime" in (package / "requirements.txt").read_text()


def test_a_folder_without_a_package_says_what_to_pass(tmp_path):
    with pytest.raises(PlannerError, match="holds no hand-over package"):
        verify_path(tmp_path)
    with pytest.raises(PlannerError, match="does not exist"):
        verify_path(tmp_path / "nowhere")


def test_a_manifest_that_is_not_json_is_named(package):
    shutil.copy(package / "README.md", package / "manifest.json")
    with pytest.raises(PlannerError, match="manifest.json cannot be read"):
        verify_path(package)


def test_outputs_that_barely_depend_on_the_input_are_not_established_not_passed():
    """A package whose outputs the check cannot judge (the same for every input) is not called verified."""
    import numpy as np

    from planner.deploy.verify import _fidelity_check

    rng = np.random.default_rng(0)
    shared = rng.normal(size=(1, 10))
    reference = [shared + 1e-7 * rng.normal(size=(1, 10)) for _ in range(8)]
    # INT8-sized error: far above the tiny part that depends on the input, far below the raw cosine gate.
    outputs = [r + 1e-3 * rng.normal(size=(1, 10)) for r in reference]
    check, figures = _fidelity_check({"candidate": {"precision": "int8"}}, reference, outputs)
    assert figures["cosine"] > 0.99 and figures["input_spread"] < 1e-3
    assert not check.passed and check.detail.startswith("not established: cannot judge")
