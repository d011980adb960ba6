"""Walking an ONNX graph with its subgraphs: the branches of If, the bodies of Loop and Scan.

It lives with the models, not in planner.onnx: loading an ONNX file counts its weights with it
(`loaders.onnx_weights`), and planner.onnx, which exports and quantizes loaded models, sits above
planner.models and uses it from here.
"""

from __future__ import annotations

from typing import Any, Iterator


def all_graphs(graph: Any) -> Iterator[Any]:
    """`graph` and every graph nested in its nodes' attributes, depth first.

    Converters put whole networks inside If branches (a voice-activity model's decoder), so weights,
    Constant nodes and quantized ops are counted there too, not in the main graph alone.
    """
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from all_graphs(attr.g)
            for sub in attr.graphs:
                yield from all_graphs(sub)
