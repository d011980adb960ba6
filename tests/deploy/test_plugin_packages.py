"""Each runtime family's exporter: the package its plugin writes runs without the planner and matches the original.

The fidelity check is verify's own (the plan's rule); the latency check's verdict depends on the machine's load,
so only that it ran is asserted.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from deploy_support import ranked, stated_result

from planner.deploy import verify_path, write_deployments
from planner.deploy.verify import FIDELITY, FILES, LATENCY, RUNTIME
from planner.plugins import CandidateSpec, ModelRef, Precision, get_plugin


def _openvino(onnx: str) -> CandidateSpec:
    return CandidateSpec(plugin="cpu.openvino", label="openvino f32 latency 1t static", precision=Precision.FP32,
                         config={"precision": "fp32", "hint": "LATENCY", "threads": 1, "static_shape": True},
                         artifacts={"onnx": onnx}, threads=1, dynamic_batch=False)


def _ort_static(onnx: str) -> CandidateSpec:
    """ONNX Runtime with its free dimensions fixed: the package's session must be built for the same shape."""
    from planner.models import load_model
    from targets.cpu.onnxruntime import fixed_dimensions

    return CandidateSpec(plugin="cpu.onnxruntime", label="onnxruntime all seq 1t static shape",
                         precision=Precision.FP32,
                         config={"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
                                 "intra_op_threads": 1, "inter_op_threads": 1, "allow_spinning": True,
                                 "free_dimensions": fixed_dimensions(onnx, load_model("demo:tiny").inputs)},
                         artifacts={"onnx": onnx}, threads=1, dynamic_batch=False)


def _torch_cpu(onnx: str) -> CandidateSpec:
    return CandidateSpec(plugin="cpu.torch", label="torch cpu fp32 1t channels_last",
                         config={"device": "cpu", "threads": 1, "interop_threads": 1, "channels_last": True,
                                 "compile": None}, threads=1, interop_threads=1)


def _fold(onnx: str) -> CandidateSpec:
    return CandidateSpec(plugin="architecture.fold", label="fold BatchNorm (exact)",
                         config={"device": "cpu", "transform": {"plugin": "architecture.fold"},
                                 "architecture": "exact"})


def _eager(onnx: str) -> CandidateSpec:
    return CandidateSpec(plugin="torch.eager", label="torch eager fp32 (cpu)", config={"device": "cpu"})


@pytest.mark.worker
@pytest.mark.parametrize(("make", "runtime", "artifact"), [
    (_openvino, "openvino", "tiny.onnx"), (_ort_static, "onnxruntime", "tiny.onnx"),
    (_torch_cpu, "torch", "model.pt2"), (_fold, "torch", "model.pt2")],
    ids=["openvino", "onnxruntime-static-shape", "torch-settings", "architecture-fold"])
def test_a_family_package_runs_its_samples_as_the_original_does(tmp_path, tiny, tiny_onnx, samples, make, runtime,
                                                                   artifact):
    spec = make(str(tiny_onnx))
    [winner, *_] = write_deployments(ranked(stated_result(spec, p50_ms=0.05)), model=ModelRef.of(tiny),
                                     feeds=samples[0], reference=samples[1], out_dir=tmp_path)
    assert winner.folder == "deploy/winner" and winner.runtime == runtime, winner.reason
    package = tmp_path / "deploy" / "winner"
    manifest = json.loads((package / "manifest.json").read_text())
    assert manifest["artifact"] == [artifact] and manifest["imports"] == [runtime, "numpy"]
    [verdict] = verify_path(package)
    assert [c.name for c in verdict.checks] == [FILES, RUNTIME, FIDELITY, LATENCY]
    assert all(c.passed for c in verdict.checks[:3]), verdict.checks
    if runtime == "torch":  # run.py runs a torch.export archive of the module the plan timed: timed when written
        assert "because it runs a torch.export program" in manifest["measured"]["basis"], manifest["measured"]
    if spec.config.get("free_dimensions"):
        # The session run.py builds is fixed at the shape measured, as the planner's was.
        assert manifest["settings"]["free_dimensions"] == spec.config["free_dimensions"]
        assert "add_free_dimension_override_by_name" in (package / "run.py").read_text()


def test_the_eager_package_is_the_fold_package_over_the_module_as_loaded(tmp_path, tiny, tiny_onnx, samples):
    """PyTorch eager's exporter writes the run.py the architecture-fold case above runs and verifies (PyTorch eager,
    default settings, over a torch.export archive), with the original module in its archive: so that case's run
    covers this package's run.py, and the archive here is checked against the original's outputs directly."""
    import numpy as np
    import torch

    for folder in ("eager", "fold"):
        (tmp_path / folder).mkdir()
    eager = get_plugin("torch.eager").package(_eager(str(tiny_onnx)), ModelRef.of(tiny), tmp_path / "eager")
    fold = get_plugin("architecture.fold").package(_fold(str(tiny_onnx)), ModelRef.of(tiny), tmp_path / "fold")
    assert eager.files == fold.files == ("model.pt2",) and eager.run_py == fold.run_py
    assert (eager.runtime, eager.imports, eager.settings) == (fold.runtime, fold.imports, fold.settings)
    settings = eager.settings
    assert (settings["dtype"], settings["threads"], settings["channels_last"]) == ("float32", None, False)
    program = torch.export.load(str(tmp_path / "eager" / "model.pt2")).module()
    feeds, reference = samples
    with torch.no_grad():
        for feed, expected in zip(feeds, reference):
            got = program(*[torch.from_numpy(a) for a in feed.values()]).numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_torch_settings_are_written_into_run_py(tmp_path, tiny, tiny_onnx):
    """The PyTorch exporter's own output: the package writer copies its settings into the manifest and its run.py
    text into the folder as they are (the static-shape case above reads both there), and times the package, which
    the torch-settings case above does; so the bf16 settings are read where the exporter puts them."""
    spec = dataclasses.replace(_torch_cpu(str(tiny_onnx)), precision=Precision.BF16)
    files = get_plugin(spec.plugin).package(spec, ModelRef.of(tiny), tmp_path)
    assert files.files == ("model.pt2",) and (tmp_path / "model.pt2").is_file()
    settings = files.settings
    assert (settings["threads"], settings["interop_threads"], settings["channels_last"], settings["dtype"]) == (
        1, 1, True, "bfloat16")
    assert "'dtype': 'bfloat16'" in files.run_py and "torch.set_num_threads" in files.run_py
