"""Each runtime family's exporter: the package its plugin writes runs without the planner and matches the original.

The fidelity check is verify's own (the plan's rule); the latency check's verdict depends on the machine's load,
so only that it ran is asserted. One package per runner is written, timed and verified in a fresh process; the
other exporters that write PyTorch's runner (eager, the architecture rewrites) have their run.py run here.
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
    (_torch_cpu, "torch", "model.pt2")],
    ids=["openvino", "onnxruntime-static-shape", "torch-settings"])
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


@pytest.mark.parametrize("make", [_eager, _fold], ids=["torch-eager", "architecture-fold"])
def test_a_torch_package_at_default_settings_runs_its_samples_as_the_original_does(tmp_path, tiny, tiny_onnx, samples,
                                                                                   make):
    """PyTorch eager's exporter and the architecture rewrites': the run.py each writes (PyTorch's runner, which the
    torch-settings case above verifies, here at PyTorch's default settings) loads its torch.export archive and
    gives the original's outputs on the samples by verify's fidelity rule. Run in this process, not written, timed
    and verified as that case is: only the exporter differs, and each timing takes seconds of a loaded machine."""
    import importlib.util

    from planner.deploy.check import PASS, judge_package_outputs
    from planner.deploy.rule import fidelity_rule

    spec = make(str(tiny_onnx))
    files = get_plugin(spec.plugin).package(spec, ModelRef.of(tiny), tmp_path)
    assert files.files == ("model.pt2",) and (files.runtime, files.imports) == ("torch", ("torch", "numpy"))
    settings = files.settings
    assert (settings["dtype"], settings["threads"], settings["channels_last"]) == ("float32", None, False)
    (tmp_path / "run.py").write_text(files.run_py)
    found = importlib.util.spec_from_file_location(f"run_{spec.plugin.replace('.', '_')}", tmp_path / "run.py")
    assert found is not None and found.loader is not None
    runner = importlib.util.module_from_spec(found)
    found.loader.exec_module(runner)
    session = runner.load(tmp_path)
    feeds, reference = samples
    outputs = [runner.first_output(runner.run(session, runner.prepare(session, feed))) for feed in feeds]
    verdict, words, _ = judge_package_outputs(reference, outputs, fidelity_rule("fp32"))
    assert verdict == PASS, words


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
