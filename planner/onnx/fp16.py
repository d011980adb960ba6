"""fp16 conversion of an ONNX file (I/O kept fp32), the strongly typed input TensorRT 10+ builds from."""

from __future__ import annotations

from pathlib import Path

from planner.onnx.files import EXTERNAL_DATA_BYTES


def fp16_onnx(src: str | Path, dst: str | Path) -> Path:
    """An fp16 copy of an ONNX file (fp32 inputs/outputs kept, with casts), topologically sorted."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    dst = Path(dst)
    converted = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
    # The converter appends the input casts at the end of the node list; the checker and
    # TensorRT's parser both want producers before consumers.
    graph = OnnxModel(converted)
    graph.topological_sort()
    large = graph.model.ByteSize() > EXTERNAL_DATA_BYTES
    onnx.save(graph.model, str(dst), save_as_external_data=large,
              location=dst.name + ".data" if large else None)
    return dst
