"""Writing hand-over packages: what a package holds, that run.py runs without the planner, and which candidate
is packaged when the best one cannot be."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import shutil
import subprocess
import sys

import pytest
from deploy_support import ranked, stated_result

from planner.deploy import write_deployments
from planner.deploy.manifest import sha256_of
from planner.plugins import CandidateSpec, ModelRef, Plugin, get_plugin
from planner.plugins.packaging import PackagingError

# Runs run.py with every planner import refused, so the package cannot lean on the planner even where it is installed.
WITHOUT_PLANNER = ("import runpy, sys; sys.modules['planner'] = None; sys.modules['targets'] = None; "
                   "runpy.run_path('run.py', run_name='__main__')")


class NoExporter(Plugin):
    """A runtime the planner can measure but not write out."""

    name = "test.no_exporter"


class BrokenExporter(Plugin):
    """A runtime whose exporter fails."""

    name = "test.broken_exporter"

    def package(self, spec, model, dest):
        """Fail the way a real exporter might."""
        raise PackagingError("the model's graph cannot be captured", "deploy another candidate")


def _lookup(*extra: Plugin):
    by_name = {p.name: p for p in extra}
    return lambda name: by_name[name] if name in by_name else get_plugin(name)


def _fake(spec: CandidateSpec, plugin: Plugin, label: str) -> CandidateSpec:
    return dataclasses.replace(spec, plugin=plugin.name, label=label)


@pytest.mark.worker
def test_an_onnx_runtime_package_holds_the_artifact_runner_samples_and_manifest(written_plan, tmp_path):
    out, deployments = written_plan
    winner = out / "deploy" / "winner"
    assert sorted(p.name for p in winner.iterdir()) == ["README.md", "manifest.json", "requirements.txt", "run.py",
                                                        "samples.npz", "tiny.onnx"]
    manifest = json.loads((winner / "manifest.json").read_text())
    assert manifest["files"] == {name: sha256_of(winner / name) for name in manifest["files"]}
    assert set(manifest["files"]) == {"tiny.onnx", "run.py", "samples.npz", "requirements.txt", "README.md"}
    assert manifest["measured"]["p50_ms"] > 0 and "p50_ci95_ms" in manifest["measured"]
    assert manifest["fidelity"]["cosine"] > 0.9999
    assert manifest["machine"]["cpu"] and manifest["machine"]["usable_cores"] >= 1
    assert manifest["settings"]["intra_op_threads"] == 1
    assert manifest["settings"]["graph_optimization_level"] == "ORT_ENABLE_ALL"
    requirements = (winner / "requirements.txt").read_text()
    assert f"onnxruntime=={importlib.metadata.version('onnxruntime')}" in requirements
    run_py = (winner / "run.py").read_text()
    assert "import planner" not in run_py and "from planner" not in run_py
    assert "'intra_op_threads': 1" in run_py
    readme = (winner / "README.md").read_text()
    assert "pip install -r requirements.txt" in readme and "planner verify ." in readme
    # The phase's best is the winner: packaged once, and its record says where.
    assert [(d.role, d.folder) for d in deployments] == [("winner", "deploy/winner"), ("phase 1", "deploy/winner")]
    assert "packaged once" in deployments[1].reason

    # Copied elsewhere and run with every planner import refused: it prints each sample's output shape.
    copy = shutil.copytree(winner, tmp_path / "elsewhere")
    run = subprocess.run([sys.executable, "-I", "-c", WITHOUT_PLANNER], cwd=copy, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("output shape (1, 10)") == 4


def test_a_winner_without_an_exporter_is_replaced_by_the_next_best(tmp_path, tiny, ort_spec, samples):
    fastest = stated_result(_fake(ort_spec, NoExporter(), "made-up runtime 1t"), p50_ms=0.01)
    results = ranked(fastest, stated_result(ort_spec, p50_ms=0.02))
    warnings: list[str] = []
    deployments = write_deployments(results, model=ModelRef.of(tiny), feeds=samples[0], reference=samples[1],
                                    out_dir=tmp_path, find_plugin=_lookup(NoExporter()), warn=warnings.append)
    winner = deployments[0]
    assert (winner.role, winner.label, winner.candidate, winner.folder) == ("winner", ort_spec.label, 1,
                                                                            "deploy/winner")
    assert "stands in for made-up runtime 1t" in winner.reason and "has no exporter" in winner.reason
    assert (tmp_path / "deploy" / "winner" / "tiny.onnx").is_file()
    assert warnings == []  # a package was written for every role


def test_a_failing_exporter_is_recorded_and_the_plan_goes_on(tmp_path, tiny, ort_spec, samples):
    broken = stated_result(_fake(ort_spec, BrokenExporter(), "broken runtime"), p50_ms=0.01, phase=2)
    warnings: list[str] = []
    deployments = write_deployments(ranked(broken), model=ModelRef.of(tiny), feeds=samples[0],
                                    reference=samples[1], out_dir=tmp_path, find_plugin=_lookup(BrokenExporter()),
                                    warn=warnings.append)
    assert [(d.role, d.folder) for d in deployments] == [("winner", ""), ("phase 2", "")]
    assert all("the model's graph cannot be captured" in d.reason for d in deployments)
    assert len(warnings) == 2 and "no hand-over package for the winner" in warnings[0]
    assert not (tmp_path / "deploy" / "winner").exists()  # a half-written package is not left behind


def test_a_plugin_that_is_not_installed_is_passed_over(tmp_path, tiny, ort_spec, samples):
    gone = stated_result(dataclasses.replace(ort_spec, plugin="test.uninstalled", label="gone"), p50_ms=0.01)
    deployments = write_deployments(ranked(gone, stated_result(ort_spec, p50_ms=0.02)), model=ModelRef.of(tiny),
                                    feeds=samples[0], reference=samples[1], out_dir=tmp_path)
    assert deployments[0].candidate == 1 and "test.uninstalled is not installed here" in deployments[0].reason


def test_each_phase_gets_its_best_and_a_new_plan_replaces_the_old_packages(tmp_path, tiny, ort_spec, samples):
    first = stated_result(ort_spec, p50_ms=0.01, phase=1)
    second = stated_result(dataclasses.replace(ort_spec, label="onnxruntime all seq 2t",
                                               config={**ort_spec.config, "intra_op_threads": 2}),
                           p50_ms=0.02, phase=2)
    (tmp_path / "deploy" / "stale").mkdir(parents=True)
    deployments = write_deployments(ranked(first, second), model=ModelRef.of(tiny), feeds=samples[0],
                                    reference=samples[1], out_dir=tmp_path)
    assert [(d.role, d.candidate, d.folder) for d in deployments] == [
        ("winner", 0, "deploy/winner"), ("phase 1", 0, "deploy/winner"),
        ("phase 2", 1, "deploy/phase-2-extra-impact")]
    assert sorted(p.name for p in (tmp_path / "deploy").iterdir()) == ["phase-2-extra-impact", "winner"]
    phase_two = json.loads((tmp_path / "deploy" / "phase-2-extra-impact" / "manifest.json").read_text())
    assert phase_two["settings"]["intra_op_threads"] == 2 and phase_two["role"] == "phase 2"
