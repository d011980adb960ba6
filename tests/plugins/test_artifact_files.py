"""A candidate's size is every file it needs (its plugin's `artifact_files`), the set its hand-over package holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.measure.evaluate import _artifact_size
from planner.plugins import CandidateSpec, get_plugin


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory, tiny) -> Path:
    from planner.onnx.export import export_onnx

    return export_onnx(tiny, tmp_path_factory.mktemp("onnx") / "tiny.onnx").path


def test_an_openvino_int8_ir_counts_its_bin_beside_its_xml(tmp_path, tiny_onnx):
    import openvino as ov

    xml = tmp_path / "tiny.int8.xml"
    ov.save_model(ov.convert_model(str(tiny_onnx)), str(xml))
    spec = CandidateSpec(plugin="cpu.openvino_int8", artifacts={"model": str(xml)})
    files = get_plugin(spec.plugin).artifact_files(spec)
    assert files == [xml, xml.with_suffix(".bin")]
    assert _artifact_size(spec) == xml.stat().st_size + xml.with_suffix(".bin").stat().st_size


def test_an_onnx_file_counts_the_external_data_it_names_whatever_its_name(tmp_path, tiny_onnx):
    import onnx

    path = tmp_path / "external.onnx"
    onnx.save_model(onnx.load(str(tiny_onnx)), str(path), save_as_external_data=True, location="weights.bin",
                    size_threshold=0)
    spec = CandidateSpec(plugin="cpu.onnxruntime", artifacts={"onnx": str(path)})
    assert get_plugin(spec.plugin).artifact_files(spec) == [path, tmp_path / "weights.bin"]
    assert _artifact_size(spec) == path.stat().st_size + (tmp_path / "weights.bin").stat().st_size


def test_a_candidate_without_files_has_no_size():
    assert _artifact_size(CandidateSpec(plugin="cpu.torch", config={"threads": 1})) is None


def test_artifacts_inside_the_plan_folder_are_named_relative_to_it(tmp_path, monkeypatch) -> None:
    """Whether the plan's --out was given absolute or relative to the current folder, its artifacts are named
    relative to the plan's folder; an artifact elsewhere keeps its path."""
    monkeypatch.chdir(tmp_path)
    spec = CandidateSpec(plugin="p.x", label="x", config={}, precision="fp32",
                         artifacts={"onnx": "out/plan/artifacts/onnx/m.onnx",
                                    "calib": str(tmp_path / "out" / "plan" / "artifacts" / "c.npz"),
                                    "other": "/opt/models/m.onnx"})
    named = spec.relative_to("out/plan").artifacts
    assert named == {"onnx": "artifacts/onnx/m.onnx", "calib": "artifacts/c.npz", "other": "/opt/models/m.onnx"}
