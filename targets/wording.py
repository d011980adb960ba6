"""The words and code the plugins describe their candidates with (`Plugin.describe`): titles and snippets.

A title names a candidate in plain words ("2 threads", not "2t"); a snippet applies it in the runtime's
own API, the lines a user pastes into their serving code: ONNX Runtime's SessionOptions, OpenVINO's
compile_model properties, torch calls. Each snippet writes what the measuring session did (the same
options, in the same order), so what is pasted is what was measured.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Sequence

from planner.onnx.quantize import TRANSFORMER_OPS

PRECISION_WORDS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "f32": "FP32"}
"""A precision as a reader writes it."""

_TORCH_DTYPES = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16"}


def threads(count: int | None) -> str:
    """'1 thread', '2 threads'; '' where the runtime chooses (None)."""
    if not count:
        return ""
    return f"{count} thread" + ("" if int(count) == 1 else "s")


def precision(name: str) -> str:
    """'fp32' as 'FP32'; an unknown name as it is, upper-cased."""
    return PRECISION_WORDS.get(str(name).lower(), str(name).upper())


def title(*parts: str) -> str:
    """The non-empty parts joined with commas: 'ONNX Runtime, all graph optimizations, 2 threads'."""
    return ", ".join(p for p in parts if p)


def file_name(path: str | Path | None, fallback: str) -> str:
    """The artifact's file name, as its package folder holds it (never the plan's working path)."""
    return Path(path).name if path else fallback


def ort_session_code(config: dict, model_file: str) -> str:
    """An ONNX Runtime CPU session with a candidate's options (planner.onnx.session.OrtSession's keys)."""
    lines = ["import onnxruntime as ort", ""]
    if config.get("defaults"):
        return "\n".join(lines + [f'session = ort.InferenceSession("{model_file}", '
                                  'providers=["CPUExecutionProvider"])'])
    mode = str(config.get("execution_mode", "ORT_SEQUENTIAL"))
    lines += ["so = ort.SessionOptions()",
              "so.graph_optimization_level = ort.GraphOptimizationLevel."
              + str(config.get("graph_optimization_level", "ORT_ENABLE_ALL")),
              f"so.execution_mode = ort.ExecutionMode.{mode}"]
    if config.get("intra_op_threads"):
        lines.append(f"so.intra_op_num_threads = {int(config['intra_op_threads'])}")
    spinning = "1" if config.get("allow_spinning", True) else "0"
    lines.append(f'so.add_session_config_entry("session.intra_op.allow_spinning", "{spinning}")')
    if mode == "ORT_PARALLEL":
        # Only parallel mode runs branches on the inter-op pool; sequential sessions never use it.
        if config.get("inter_op_threads"):
            lines.append(f"so.inter_op_num_threads = {int(config['inter_op_threads'])}")
        lines.append(f'so.add_session_config_entry("session.inter_op.allow_spinning", "{spinning}")')
    for name, size in (config.get("free_dimensions") or {}).items():
        lines.append(f'so.add_free_dimension_override_by_name("{name}", {int(size)})')
    lines.append(f'session = ort.InferenceSession("{model_file}", so, providers=["CPUExecutionProvider"])')
    return "\n".join(lines)


def openvino_compile_code(properties: dict[str, Any], model_file: str,
                          shapes: Sequence[Sequence[int]] | None = None) -> str:
    """OpenVINO's read, reshape (each input by index, -1 an open batch) and compile for the CPU."""
    lines = ["import openvino as ov", "", "core = ov.Core()", f'model = core.read_model("{model_file}")']
    if shapes:
        lines.append("model.reshape({" + ", ".join(f"{i}: {list(map(int, s))}" for i, s in enumerate(shapes))
                     + "})")
    opening = 'compiled = core.compile_model(model, "CPU", {'
    props = [f'"{k}": "{v}"' if isinstance(v, str) else f'"{k}": {v!r}' for k, v in properties.items()]
    # One property a line, aligned under the first: the call stays readable in a report's code block.
    lines.append(opening + f",\n{' ' * len(opening)}".join(props) + "})")
    return "\n".join(lines)


def torch_code(*, device: str = "cpu", precision: str = "fp32", threads: int | None = None,
               interop_threads: int | None = None, channels_last: bool = False,
               compile_mode: str | None = None) -> str:
    """The torch calls that run `model` (the user's module) on input `x` as a torch candidate did
    (planner.pytorch.session.TorchSession's settings)."""
    lines = ["import torch", ""]
    if threads:
        lines.append(f"torch.set_num_threads({int(threads)})")
    if interop_threads:
        lines.append(f"torch.set_num_interop_threads({int(interop_threads)})  # before any other torch work")
    dtype = _TORCH_DTYPES.get(str(precision), "torch.float32")
    where = [f'"{device}"'] if device != "cpu" else []
    if dtype != "torch.float32":
        where.append(dtype)
    lines.append(f"model = model.to({', '.join(where)}).eval()" if where else "model = model.eval()")
    if channels_last:
        lines.append("model = model.to(memory_format=torch.channels_last)")
    if compile_mode:
        mode = "" if compile_mode == "default" else f', mode="{compile_mode}"'
        lines.append(f"model = torch.compile(model{mode})")
    x = f"x.to({', '.join(where)})" if where else "x"
    if channels_last:
        x += ".contiguous(memory_format=torch.channels_last)"
    note = "  # float inputs only: token ids stay integers" if dtype != "torch.float32" else ""
    lines += ["with torch.inference_mode():", f"    y = model({x}){note}"]
    return "\n".join(lines)


def ort_quantize_code(mode: str, source: str, dest: str, *, reduce_range: bool = False,
                      transformer: bool = False) -> str:
    """ONNX Runtime's quantizer as planner.onnx.quantize calls it: 'static' (QDQ, per-channel, calibrated on
    `reader`, the user's CalibrationDataReader) or 'dynamic' (weights only)."""
    extra = ", reduce_range=True" if reduce_range else ""
    ready = str(Path(source).with_suffix(".pre.onnx"))
    # The plan pre-processes (shape inference, folding) before it quantizes, as ONNX Runtime's docs advise.
    if mode == "dynamic":
        return "\n".join(["from onnxruntime.quantization import QuantType, quantize_dynamic",
                          "from onnxruntime.quantization.shape_inference import quant_pre_process", "",
                          f'quant_pre_process("{source}", "{ready}")',
                          f'quantize_dynamic("{ready}", "{dest}", weight_type=QuantType.QInt8{extra})'])
    ops = f", op_types_to_quantize={list(TRANSFORMER_OPS)!r}" if transformer else ""
    return "\n".join([
        "from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static",
        "from onnxruntime.quantization.shape_inference import quant_pre_process", "",
        f'quant_pre_process("{source}", "{ready}")',
        "# reader: an onnxruntime.quantization.CalibrationDataReader over a few hundred of your inputs",
        f'quantize_static("{ready}", "{dest}", reader, quant_format=QuantFormat.QDQ, per_channel=True,',
        "                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,",
        f"                calibrate_method=CalibrationMethod.MinMax{extra}{ops})"])


def nncf_quantize_code(source: str, dest: str, *, transformer: bool = False) -> str:
    """NNCF post-training INT8 of an ONNX file into OpenVINO IR, with the preset the plan used."""
    preset = "MIXED" if transformer else "PERFORMANCE"
    model_type = ", model_type=nncf.ModelType.TRANSFORMER" if transformer else ""
    return "\n".join([
        "import nncf", "import openvino as ov", "",
        "# calibration: a few hundred of your inputs, each a {input index: array} dict",
        f'quantized = nncf.quantize(ov.convert_model("{source}"), nncf.Dataset(calibration),',
        f"                          preset=nncf.QuantizationPreset.{preset}{model_type})",
        f'ov.save_model(quantized, "{dest}")'])


def comment(text: str, width: int = 100) -> str:
    """A sentence as Python comment lines of at most `width` characters (a snippet's line where no call applies)."""
    return "\n".join(textwrap.wrap(text, width=width, initial_indent="# ", subsequent_indent="# "))


def code(*blocks: str) -> str:
    """Snippets run one after the other, as one: blank-line separated, each import written once."""
    seen: set[str] = set()
    parts = []
    for block in blocks:
        lines = [line for line in block.splitlines() if not (_is_import(line) and line in seen)]
        seen.update(line for line in lines if _is_import(line))
        parts.append("\n".join(lines).strip("\n"))
    return "\n\n".join(p for p in parts if p)


def _is_import(line: str) -> bool:
    return line.startswith(("import ", "from "))
