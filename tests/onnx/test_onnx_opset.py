"""Opset-11 files with Constant-node weights, as other converters write them, made ready for per-channel QDQ."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from trait_models import constant_weights_classifier, dense_map_model, sequence_model

from planner.errors import runtime_error_line
from planner.models.spec import ModelInputs, TensorSpec
from planner.onnx.opset import QDQ_OPSET, PreparationError, prepare_for_qdq
from planner.onnx.quantize import check_ort_loads, preprocess, quantize_qdq


def _inputs(shape: tuple[int, ...], axes: tuple[str, ...] = ("batch", "", "", "")) -> ModelInputs:
    return ModelInputs((TensorSpec(name="x", shape=shape, axes=axes),))


def _feeds(shape: tuple[int, ...], count: int = 4, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]


def _run(path, feed) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_classifier_is_converted_lifted_and_quantized_per_channel(tmp_path):
    src = constant_weights_classifier(tmp_path / "cls11.onnx")
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", _inputs((1, 3, 32, 32)))

    assert (ready.from_opset, ready.to_opset, ready.weights_lifted) == (11, QDQ_OPSET, 6)
    assert ready.notes == ("before quantizing: converted from opset 11 to 17 (per-channel QDQ needs 13 or later); "
                           "6 weight tensors moved from Constant nodes to initializers (the quantizer only "
                           "quantizes initializers)",)
    model = onnx.load(str(ready.path))
    onnx.checker.check_model(model, full_check=True)
    assert not [n for n in model.graph.node if n.op_type == "Constant"]
    # The batch stays open: the plan sweeps it.
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param

    source, _ = preprocess(ready.path, tmp_path / "pre.onnx")
    feeds = _feeds((1, 3, 32, 32))
    quantized = quantize_qdq(source, tmp_path / "int8.onnx", feeds)
    check_ort_loads(quantized)
    proto = onnx.load(str(quantized))
    dequantized = {n.output[0]: n for n in proto.graph.node if n.op_type == "DequantizeLinear"}
    scales = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    for node in (n for n in proto.graph.node if n.op_type in ("Conv", "Gemm")):
        weight = dequantized[node.input[1]]  # every weight is INT8 behind a DequantizeLinear
        assert any(a.name == "axis" for a in weight.attribute) or node.op_type == "Gemm"
        if node.op_type == "Conv":
            assert scales[weight.input[1]].shape == (16,)  # one scale per output channel
    for batch in (1, 3):
        feed = _feeds((batch, 3, 32, 32), count=1, seed=9)[0]
        assert _cosine(_run(quantized, feed), _run(src, feed)) > 0.99


def test_the_sequence_model_quantizes_and_keeps_its_shape(tmp_path):
    src = sequence_model(tmp_path / "seq11.onnx")
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", _inputs((1, 3, 8, 40)))
    assert ready.weights_lifted == 4 and ready.to_opset == QDQ_OPSET
    source, _ = preprocess(ready.path, tmp_path / "pre.onnx")
    quantized = quantize_qdq(source, tmp_path / "int8.onnx", _feeds((1, 3, 8, 40)))
    feed = _feeds((2, 3, 8, 40), count=1, seed=3)[0]
    got = _run(quantized, feed)
    assert got.shape == (2, 40, 12)
    assert _cosine(got, _run(src, feed)) > 0.99


def test_open_dimensions_are_fixed_except_batch(tmp_path):
    src = dense_map_model(tmp_path / "dense11.onnx")
    inputs = _inputs((1, 3, 64, 48), axes=("batch", "", "height", "width"))
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", inputs)
    assert ready.fixed_inputs == ("x [batch, 3, 64, 48]",)
    assert "input shapes fixed at x [batch, 3, 64, 48] (batch and sequence axes left open)" in ready.notes[0]
    model = onnx.load(str(ready.path))
    dims = [(d.dim_param or d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["p2o.DynamicDimension.0", 3, 64, 48]
    # The same names in the output are fixed too, so the graph stays consistent.
    out = [(d.dim_param or d.dim_value) for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert out == ["p2o.DynamicDimension.0", 1, 64, 48]


def test_a_sequence_axis_stays_open(tmp_path):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", "t", "c"])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", "t", "c"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    src = tmp_path / "seq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", _inputs((1, 20, 8), axes=("batch", "sequence", "c")))
    dims = [(d.dim_param or d.dim_value) for d in onnx.load(str(ready.path)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["n", "t", 8]


def test_a_ready_file_is_used_as_it_is(tmp_path):
    src = constant_weights_classifier(tmp_path / "cls11.onnx")
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", _inputs((1, 3, 32, 32)))
    again = prepare_for_qdq(ready.path, tmp_path / "again.onnx", _inputs((1, 3, 32, 32)))
    assert again.path == ready.path and not again.changed and again.notes == ()
    assert not (tmp_path / "again.onnx").exists()


def test_a_failing_conversion_names_its_step(tmp_path):
    # An op onnx has no schema for cannot be converted between opsets.
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2])
    graph = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"])], "g", [x], [y])
    src = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(src))
    with pytest.raises(PreparationError) as caught:
        prepare_for_qdq(src, tmp_path / "ready.onnx", ModelInputs.single((2, 2)))
    problem = caught.value.problem
    assert problem.startswith("converting the opset-11 file to opset 17 failed: Op ")
    assert "has no registered schema" in problem and ".cc:" not in problem and "Assertion" not in problem
    assert "convert.cc" in caught.value.details  # the raw text is kept for the log


def test_runtime_errors_read_as_one_plain_line(tmp_path):
    """The file quantized at opset 11, as before: ONNX Runtime refuses it and OpenVINO cannot convert it."""
    import openvino as ov

    src = constant_weights_classifier(tmp_path / "cls11.onnx")
    source, _ = preprocess(src, tmp_path / "pre.onnx")
    quantized = quantize_qdq(source, tmp_path / "int8.onnx", _feeds((1, 3, 32, 32), count=2))
    with pytest.raises(Exception) as ort_error:
        check_ort_loads(quantized)
    assert runtime_error_line(ort_error.value) == "Unrecognized attribute: axis for operator DequantizeLinear"
    with pytest.raises(Exception) as ov_error:
        ov.Core().read_model(str(quantized))
    line = runtime_error_line(ov_error.value)
    assert line.startswith("OpenVINO could not convert ") and "Conv-11" in line and "(first: " in line
    assert "src/" not in line and "\n" not in line


def test_weights_in_an_external_file_are_read_when_the_file_changes(tmp_path):
    src = constant_weights_classifier(tmp_path / "cls11.onnx")
    ready = prepare_for_qdq(src, tmp_path / "ready.onnx", _inputs((1, 3, 32, 32)))
    # The converted file again at opset 11, weights beside it in their own file, as large exports are.
    model = onnx.load(str(ready.path))
    model.opset_import[0].version = 11
    split = tmp_path / "split"
    split.mkdir()
    onnx.save(model, str(split / "m.onnx"), save_as_external_data=True, location="m.weights", size_threshold=0)
    again = prepare_for_qdq(split / "m.onnx", tmp_path / "again.onnx", _inputs((1, 3, 32, 32)))
    assert again.to_opset == QDQ_OPSET and again.weights_lifted == 0
    feed = _feeds((2, 3, 32, 32), count=1, seed=4)[0]
    np.testing.assert_allclose(_run(again.path, feed), _run(src, feed), rtol=1e-5, atol=1e-6)
