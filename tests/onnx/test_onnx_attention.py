"""has_attention: a matrix product of two computed tensors into Softmax, or a LayerNormalization, is attention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from planner.onnx.attention import has_attention


def _save(tmp_path: Path, nodes: list, inits: list, name: str) -> Path:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def test_scores_scaled_into_softmax_are_attention(tmp_path: Path) -> None:
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "xt"], ["scores"]),
             helper.make_node("Div", ["scores", "scale"], ["scaled"]),
             helper.make_node("Softmax", ["scaled"], ["y"], axis=-1)]
    assert has_attention(_save(tmp_path, nodes, [_weight("scale", ())], "scores"))


def test_layer_norm_alone_is_enough(tmp_path: Path) -> None:
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)]
    assert has_attention(_save(tmp_path, nodes, [_weight("g", (8,)), _weight("b", (8,))], "norm"))


def test_a_classifier_head_into_softmax_is_not(tmp_path: Path) -> None:
    # A layer's product with its own weights then Softmax: class probabilities, not attention.
    nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"]),
             helper.make_node("Add", ["logits", "bias"], ["biased"]),
             helper.make_node("Softmax", ["biased"], ["y"], axis=-1)]
    assert not has_attention(_save(tmp_path, nodes, [_weight("w", (8, 3)), _weight("bias", (3,))], "head"))
