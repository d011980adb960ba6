"""Quantization pre-processing leaves nothing in the user's current folder."""

from __future__ import annotations

from trait_models import scalar_branch_model

from planner.onnx.quantize import preprocess


def test_incomplete_shape_inference_writes_nothing_into_the_current_folder(tmp_path, monkeypatch):
    # ONNX Runtime's symbolic shape inference cannot follow this model's If branches; when it gives up,
    # it saves its partial model into the current folder unless the planner keeps it elsewhere.
    model = scalar_branch_model(tmp_path / "vad.onnx")
    cwd = tmp_path / "user-folder"
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    path, notes = preprocess(model, tmp_path / "vad.pre.onnx")

    assert list(cwd.iterdir()) == []
    assert path == tmp_path / "vad.pre.onnx" and path.is_file()
    assert any("without symbolic shapes" in n for n in notes)
