"""Facts about ONNX files on disk: their size with external data, and when weights must move out."""

from __future__ import annotations

from pathlib import Path

# onnx_files lives with the graph readers in planner.models: the plugin contract, below this layer, reads it.
from planner.models.onnx_graphs import INLINE_READ_BYTES as INLINE_READ_BYTES
from planner.models.onnx_graphs import onnx_files as onnx_files

# protobuf cannot hold more than 2 GiB; larger models must keep their weights in a side file.
EXTERNAL_DATA_BYTES = 1_800_000_000


def model_bytes(path: Path) -> int:
    """The file's size plus its `<name>.data` external-data file, if there is one."""
    path = Path(path)
    data = path.with_name(path.name + ".data")
    return path.stat().st_size + (data.stat().st_size if data.is_file() else 0)
