"""Walking an ONNX graph with its subgraphs: the branches of If, the bodies of Loop and Scan.

It lives with the models, not in planner.onnx: loading an ONNX file counts its weights with it
(`loaders.onnx_weights`), and planner.onnx, which exports and quantizes loaded models, sits above
planner.models and uses it from here.
"""

from __future__ import annotations

from pathlib import Path
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


# Past this an ONNX file holds its weights itself; onnx_files checks only for the exporter's `<name>.data`.
INLINE_READ_BYTES = 256 * 1024 * 1024


def onnx_files(path: Path) -> list[Path]:
    """The file and every external-data file it names (read from the graph, weights not loaded), in that order.

    An exporter names its side file `<name>.data`, but any converter may choose another name or several
    files; the graph's initializers say which. Files it names that are missing are left out.
    """
    import onnx

    path = Path(path)
    found = [path]
    if path.stat().st_size > INLINE_READ_BYTES:
        # Weights this large are inline: reading the graph would parse them all to find no side file.
        data = path.with_name(path.name + ".data")
        return found + ([data] if data.is_file() else [])
    proto = onnx.load(str(path), load_external_data=False)
    tensors = [*proto.graph.initializer, *(a.t for n in proto.graph.node for a in n.attribute if a.HasField("t"))]
    for tensor in tensors:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        side = path.parent / location if location else None
        if side is not None and side.is_file() and side not in found:
            found.append(side)
    return found
