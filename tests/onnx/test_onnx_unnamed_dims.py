"""PaddleOCR's classifier names both its height and its width '?': preparing it for INT8 fixes each at its own size."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from trait_models import dense_map_model

from planner.models.spec import ModelInputs, parse_input
from planner.onnx.opset import prepare_for_qdq


def test_axes_named_question_mark_are_fixed_one_by_one(tmp_path) -> None:
    path = dense_map_model(tmp_path / "det.onnx")
    model = onnx.load(str(path))
    for value in (*model.graph.input, *model.graph.output):
        for dim in value.type.tensor_type.shape.dim[2:]:
            dim.dim_param = "?"
    onnx.save(model, str(path))

    ready = prepare_for_qdq(path, tmp_path / "det.ready.onnx", ModelInputs((parse_input("x:1x3x48x64:float32"),)))

    dims = onnx.load(str(ready.path)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims[1:]] == [3, 48, 64]
    out = ort.InferenceSession(str(ready.path)).run(None, {"x": np.zeros((1, 3, 48, 64), np.float32)})[0]
    assert out.shape == (1, 1, 48, 64)
