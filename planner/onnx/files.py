"""Facts about ONNX files on disk: their size with external data, and when weights must move out."""

from __future__ import annotations

from pathlib import Path

# protobuf cannot hold more than 2 GiB; larger models must keep their weights in a side file.
EXTERNAL_DATA_BYTES = 1_800_000_000
# Past this an ONNX file holds its weights itself; onnx_files checks only for the exporter's `<name>.data`.
INLINE_READ_BYTES = 256 * 1024 * 1024


def model_bytes(path: Path) -> int:
    """The file's size plus its `<name>.data` external-data file, if there is one."""
    path = Path(path)
    data = path.with_name(path.name + ".data")
    return path.stat().st_size + (data.stat().st_size if data.is_file() else 0)


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
