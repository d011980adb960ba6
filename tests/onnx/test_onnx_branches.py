"""Models with If branches (a voice-activity model picks one by sample rate): INT8 is real INT8 or a plain
failure, shapes are not fixed where a branch could contradict them, and a runtime's dump reads as one line."""

from __future__ import annotations

import pytest
from trait_models import scalar_branch_model

from planner.measure.evaluate import plain_failure
from planner.models.loaded import make_feeds
from planner.models.spec import ModelInputs, parse_input
from planner.onnx.opset import prepare_for_qdq
from planner.onnx.quantize import (
    QuantizationError,
    int8_op_count,
    quantize_qdq,
    quantize_weights_dynamic,
)

INPUTS = ModelInputs(tuple(parse_input(t) for t in ("input:1x512:float32", "state:2x1x64:float32",
                                                    "sr::int64:16000")))


def test_input_shapes_stay_open_when_the_graph_branches(tmp_path) -> None:
    model = scalar_branch_model(tmp_path / "vad.onnx")
    ready = prepare_for_qdq(model, tmp_path / "vad.ready.onnx", INPUTS)
    # The weights in the branches are lifted; the window's 512 is not fixed (the 8 kHz branch takes 256).
    assert ready.weights_lifted > 0
    assert not ready.fixed_inputs
    assert not any("input shapes fixed" in n for n in ready.notes)


def test_dynamic_int8_quantizes_inside_branches(tmp_path) -> None:
    ready = prepare_for_qdq(scalar_branch_model(tmp_path / "vad.onnx"), tmp_path / "vad.ready.onnx", INPUTS)
    out = quantize_weights_dynamic(ready.path, tmp_path / "vad.dyn.onnx")
    assert int8_op_count(out) > 0


def test_a_quantized_file_without_a_quantized_op_is_refused_in_plain_words(tmp_path) -> None:
    from planner.onnx.quantize import _require_int8_ops

    ready = prepare_for_qdq(scalar_branch_model(tmp_path / "vad.onnx"), tmp_path / "vad.ready.onnx", INPUTS)
    # Static QDQ quantizes the main graph's score layer; the float file itself has nothing in INT8.
    assert int8_op_count(quantize_qdq(ready.path, tmp_path / "vad.qdq.onnx", make_feeds(INPUTS, count=2, seed=0))) > 0
    assert int8_op_count(ready.path) == 0
    with pytest.raises(QuantizationError, match="static QDQ quantization left every op in float"):
        _require_int8_ops(ready.path, "static QDQ quantization")


def test_a_runtime_dump_becomes_one_line_with_the_whole_text_kept() -> None:
    dump = ("RuntimeError: Exception from src/inference/src/cpp/core.cpp:84:\n"
            "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
            "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted. Failed operations detailed "
            "log:\n-- Conv-16 with a message:\nThe input data tensor's rank has to be known (static)\n\n"
            "Summary:\n-- Conversion is failed for: Conv-16, ReduceMean-16\n")
    line, details = plain_failure(dump)
    assert line == ("RuntimeError: OpenVINO could not convert Conv-16, ReduceMean-16 (first: The input data tensor's "
                    "rank has to be known (static))")
    assert details == dump
    assert plain_failure("ValueError: bad shape") == ("ValueError: bad shape", "")
