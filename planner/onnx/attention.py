"""Whether an ONNX graph has attention: the fact that decides how INT8 quantizes it.

A transformer's LayerNorm inputs, softmax scores and residual sums have ranges that one INT8 scale per
tensor holds badly (a few outlier channels, probabilities near 0 and 1); its matrix products do not. So
the quantizers treat such a graph apart: ONNX Runtime's static QDQ quantizes only the matrix products
(planner.onnx.quantize), and NNCF is told the model is a transformer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Ops that may sit between attention's scores (a MatMul) and its Softmax: the 1/sqrt(d) scale, the mask,
# and the reshapes an exporter adds.
_BETWEEN_SCORES_AND_SOFTMAX = frozenset({"Div", "Mul", "Add", "Sub", "Where", "Cast", "Reshape", "Transpose",
                                         "Identity", "Unsqueeze", "Squeeze"})
_PRODUCTS = frozenset({"MatMul", "Einsum", "FusedMatMul"})
_STEPS_BACK = 4


def has_attention(path: Path) -> bool:
    """Whether the ONNX file at `path` has attention: a matrix product feeding a Softmax (through at most a few
    scale, mask and reshape ops), or a LayerNormalization; every If/Loop branch is looked in too."""
    import onnx

    from planner.models.onnx_graphs import all_graphs

    graph = onnx.load(str(path), load_external_data=False).graph
    return any(graph_has_attention(g) for g in all_graphs(graph))


def graph_has_attention(graph: Any) -> bool:
    """`has_attention` for one graph (its own nodes, not its branches')."""
    producer = {out: node for node in graph.node for out in node.output}
    constant = {i.name for i in graph.initializer} | {out for n in graph.node if n.op_type == "Constant"
                                                      for out in n.output}
    for node in graph.node:
        if node.op_type == "LayerNormalization":
            return True
        if node.op_type == "Softmax" and _fed_by_scores(node, producer, constant):
            return True
    return False


def _fed_by_scores(node: Any, producer: dict[str, Any], constant: set[str]) -> bool:
    """Whether attention scores (a product of two computed tensors, queries by keys: a layer's product with its
    weights is a classifier head) reach `node`'s first input through ops that only scale, mask or reshape."""
    frontier = [node.input[0]] if node.input else []
    for _ in range(_STEPS_BACK):
        found = [producer[name] for name in frontier if name in producer]
        if any(n.op_type in _PRODUCTS and not any(i in constant for i in n.input) for n in found):
            return True
        frontier = [name for n in found if n.op_type in _BETWEEN_SCORES_AND_SOFTMAX for name in n.input]
        if not frontier:
            return False
    return False
