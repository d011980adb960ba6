"""INT8 in ONNX: ORT's pre-processing, static QDQ (calibrated, per-channel) and dynamic weights,
and the CPU facts that decide how to quantize (VNNI, reduce_range)."""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from planner.errors import PlannerError, failure_reason
from planner.hardware.profile import INT8_DOT_FEATURES
from planner.onnx.files import EXTERNAL_DATA_BYTES, model_bytes

if TYPE_CHECKING:
    from planner.models.loaded import Feed
    from planner.plugins import PlanContext

CALIBRATION_SEED = 4242  # distinct from the fidelity inputs' seed, so calibration never sees them


CALIBRATION_BATCHES = 32
CALIBRATION_BATCHES_QUICK = 8
NO_INT8_DOT_NOTE = ("no VNNI: INT8 may not be faster here (the CPU has none of "
                    + ", ".join(INT8_DOT_FEATURES) + ")")


class QuantizationError(PlannerError):
    """ONNX Runtime's quantizer could not produce an INT8 model."""


def int8_cpu_notes(hw: Any) -> list[str]:
    """Whether this CPU has native INT8 dot products, as a note for the specs."""
    found = [f for f in INT8_DOT_FEATURES if hw.cpu.has(f)]
    if found:
        return [f"the CPU has {', '.join(found)}: INT8 dot products run natively"]
    return [NO_INT8_DOT_NOTE]


def needs_reduced_range(hw: Any) -> bool:
    """Whether to quantize weights to 7 bits: an x86 CPU without VNNI/AMX (16-bit intermediate sums)."""
    is_x86 = bool(getattr(hw.cpu, "is_x86", False))
    return is_x86 and not any(hw.cpu.has(f) for f in INT8_DOT_FEATURES)


def calibration_inputs(ctx: "PlanContext") -> tuple[list["Feed"], str]:
    """The calibration batches and a note saying what they were: the validation data's calibration part when
    there is some (`planner.models.valdata.split_val_data`: the judgement sees the other part), else random.

    The validation data is the user's --val-data, or a demo's built-in held-out set (`ctx.val_data_basis` says which).
    """
    count = CALIBRATION_BATCHES_QUICK if ctx.quick else CALIBRATION_BATCHES
    val_data = getattr(ctx, "val_data", None)
    if val_data:
        from planner.models.valdata import samples_note, split_val_data

        split = split_val_data(Path(val_data), inputs=ctx.model.inputs)
        feeds = [feed for feed, _ in split.calibration][:count]
        if feeds:
            basis = getattr(ctx, "val_data_basis", "--val-data") or "--val-data"
            made_from = samples_note(Path(val_data))  # images or clips the batches were converted from
            if made_from:
                basis += f" ({made_from.get('kind', 'samples')} from {made_from.get('source', 'the folder')})"
            used = sum(len(next(iter(f.values()))) for f in feeds)
            return feeds, split.calibration_note(basis, used=used, batches=len(feeds))
    feeds = ctx.model.make_feeds(count=count, seed=CALIBRATION_SEED)
    return feeds, (f"calibrated on {count} batches of generated random inputs (no --val-data): its accuracy on "
                   "real data is not established; pass --val-data (images, .wav clips or arrays) to calibrate "
                   "on real samples")


# Symbolic shape inference on a large or awkward graph can take minutes; past this the file is quantized as it is.
PREPROCESS_TIMEOUT_S = 900.0


def preprocess(src: Path, dst: Path) -> tuple[Path, tuple[str, ...]]:
    """ORT's quantization pre-processing (shape inference, BN folding); the original on failure.

    It runs in a worker process inside a scratch folder: when ONNX Runtime's symbolic shape
    inference cannot infer every shape, it saves its partial model (`sym_shape_infer_temp.onnx`
    and a `.data` file per weight) into the current folder, which is the user's, and a worker's
    folder can change without moving anyone else's relative paths.
    """
    from planner.measure.worker import run_isolated

    outcome = run_isolated(_preprocess_in_scratch, str(Path(src).resolve()), str(Path(dst).resolve()),
                           timeout_s=PREPROCESS_TIMEOUT_S)
    if not outcome.ok:
        return Path(src), (f"quantization pre-processing skipped ({outcome.reason}): quantizing the export as it is",)
    path, notes = outcome.value
    return Path(path), tuple(notes)


def _preprocess_in_scratch(src: str, dst: str) -> tuple[str, tuple[str, ...]]:
    """Worker side of `preprocess`: the pre-processing with a scratch folder as the current one."""
    import os
    import tempfile

    from onnxruntime.quantization.shape_inference import quant_pre_process

    large = model_bytes(Path(src)) > EXTERNAL_DATA_BYTES
    with tempfile.TemporaryDirectory(prefix="planner-preprocess-") as scratch:
        os.chdir(scratch)
        # A failed pass prints its traceback and ONNX Runtime's C++ warnings to the terminal; the notes
        # returned say what failed, so this worker's own output goes to a file no one reads.
        log = os.open(os.path.join(scratch, "output.log"), os.O_WRONLY | os.O_CREAT)
        os.dup2(log, 1)
        os.dup2(log, 2)
        try:
            quant_pre_process(src, dst, save_as_external_data=large)
            return dst, ()
        except Exception as exc:  # noqa: BLE001 - symbolic shape inference raises many types
            first = failure_reason(exc)
        try:
            # Symbolic shape inference is the usual failure; ONNX's own inference is often enough.
            quant_pre_process(src, dst, skip_symbolic_shape=True, save_as_external_data=large)
            return dst, (f"quantization pre-processing without symbolic shapes ({first})",)
        except Exception as exc:  # noqa: BLE001 - as above
            return src, (f"quantization pre-processing skipped ({failure_reason(exc)}): "
                         "quantizing the export as it is",)


@contextlib.contextmanager
def quiet_library_output() -> Iterator[io.StringIO]:
    """Keep a quantizer's progress bars and root-logger warnings out of the planner's own output.

    NNCF draws rich progress bars on stdout (which would corrupt `planner plan --json`), and ONNX
    Runtime's quantizer logs per-tensor notes ("Axis 1 is out-of-range ...") to the root logger.
    What they print is kept in the yielded buffer; errors still raise.
    """
    buffer = io.StringIO()
    # NNCF's logger has its own handler, bound to the stream it found at import: it must be quietened by name.
    loggers = [logging.getLogger(), logging.getLogger("nncf")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            yield buffer
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


TRANSFORMER_OPS = ("MatMul", "Gemm", "Conv")
"""What static QDQ quantizes in a graph with attention: the matrix products, which carry the arithmetic."""

TRANSFORMER_RECIPE_NOTE = (
    "the graph has attention (a matrix product into Softmax, or LayerNorm): static INT8 quantizes only its matrix "
    "products (MatMul, Gemm, Conv) and keeps LayerNorm, Softmax and the residual Adds in float, as one INT8 scale "
    "per tensor holds their outlier channels and probabilities badly")


def qdq_recipe_notes(attention: bool) -> tuple[str, ...]:
    """What static QDQ quantized, for a candidate's notes: the transformer recipe's words where it applied."""
    return (TRANSFORMER_RECIPE_NOTE,) if attention else ()


def quantize_qdq(src: Path, dst: Path, feeds: Sequence["Feed"], *,
                 reduce_range: bool = False, for_tensorrt: bool = False, attention: bool | None = None) -> Path:
    """Static INT8 in QDQ form, per-channel weights, MinMax-calibrated on `feeds` (arrays by input name); returns `dst`.

    `for_tensorrt` makes the form TensorRT's explicit quantization accepts: symmetric activations
    (zero point 0), fp32 weights behind a Q/DQ pair TensorRT folds, and float biases.
    `attention` (read from `src` when None, `planner.onnx.attention.has_attention`): quantize only the matrix
    products (`TRANSFORMER_OPS`), leaving LayerNorm, Softmax and the residual Adds in float.
    """
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    from planner.onnx.attention import has_attention

    if not feeds:
        raise QuantizationError("static quantization needs at least one calibration input")
    extra: dict = {}
    if for_tensorrt:
        extra = {"ActivationSymmetric": True, "WeightSymmetric": True, "AddQDQPairToWeight": True,
                 "QuantizeBias": False, "DedicatedQDQPair": True}
    if attention is None:
        attention = has_attention(Path(src))
    if attention:
        # Only the products' inputs pass through INT8: their outputs are not quantized (the bias Add and the
        # scores' Softmax read them in float).
        extra["OpTypesToExcludeOutputQuantization"] = list(TRANSFORMER_OPS)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    with quiet_library_output():
        quantize_static(str(src), str(dst), _calibration_reader(src, feeds),
                        quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=reduce_range,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax,
                        op_types_to_quantize=list(TRANSFORMER_OPS) if attention else None,
                        use_external_data_format=model_bytes(Path(src)) > EXTERNAL_DATA_BYTES,
                        extra_options=extra)
    if attention:
        _float_for_the_rest(Path(dst))
    _require_int8_ops(Path(dst), "static QDQ quantization")
    return Path(dst)


def _float_for_the_rest(path: Path) -> None:
    """Give every op the recipe keeps in float the float tensor back where ONNX Runtime handed it the INT8 copy.

    The quantizer puts one Q/DQ pair on a tensor and rewires all of its readers to the pair's output, so a
    LayerNorm's output that feeds the next matrix product also reaches the residual sum rounded to INT8, at a
    scale that an outlier channel sets. Only the products read the rounded copy after this; the file's weights
    (kept in a data file beside a large model) are not loaded or rewritten.
    """
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    weights = {i.name for i in graph.initializer}
    changed = False
    for node in graph.node:
        if node.op_type in TRANSFORMER_OPS or node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        for k, name in enumerate(node.input):
            dq = producer.get(name)
            q = producer.get(dq.input[0]) if dq is not None and dq.op_type == "DequantizeLinear" else None
            if q is not None and q.op_type == "QuantizeLinear" and q.input[0] not in weights:
                node.input[k] = q.input[0]
                changed = True
    if changed:
        onnx.save(model, str(path))


def quantize_weights_dynamic(src: Path, dst: Path, *, reduce_range: bool = False) -> Path:
    """Dynamic INT8: weights quantized now, activations per call; returns `dst`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    with quiet_library_output():
        # EnableSubgraph: weights inside If/Loop branches (a recurrent model's whole decoder) are
        # quantized too; ONNX Runtime supports this for dynamic quantization only.
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, reduce_range=reduce_range,
                         use_external_data_format=model_bytes(Path(src)) > EXTERNAL_DATA_BYTES,
                         extra_options={"EnableSubgraph": True})
    _require_int8_ops(Path(dst), "dynamic quantization")
    return Path(dst)


# Ops that only appear where a quantizer turned float work into INT8.
_INT8_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
                       "ConvInteger", "QLinearConv", "QLinearMatMul", "DynamicQuantizeMatMul",
                       "DynamicQuantizeLSTM", "MatMulIntegerToFloat"})


def int8_op_count(path: Path) -> int:
    """How many quantization ops a file holds, in its main graph and every If/Loop/Scan branch."""
    import onnx

    from planner.models.onnx_graphs import all_graphs

    graph = onnx.load(str(path), load_external_data=False).graph
    return sum(node.op_type in _INT8_OPS for g in all_graphs(graph) for node in g.node)


def _require_int8_ops(path: Path, what: str) -> None:
    """Refuse a "quantized" file in which nothing was quantized: timing it would present fp32 as INT8."""
    if int8_op_count(path) == 0:
        raise QuantizationError(
            f"{what} left every op in float (no quantized op in the file): ONNX Runtime quantizes only the ops it "
            "supports, and static quantization does not enter If/Loop branches, where a recurrent model keeps its "
            "layers", "nothing to measure in INT8 for this model with ONNX Runtime's quantizer")


def check_ort_loads(path: Path) -> None:
    """Raise ONNX Runtime's own error where it refuses a quantized file (before any measurement is planned on it).

    The graph is only loaded and checked, not optimised: the measurement builds its own session.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _calibration_reader(src: Path, feeds: Sequence["Feed"]) -> Any:
    import onnx

    from planner.onnx.feeds import feed_for

    proto = onnx.load(str(src), load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    feeds = [feed_for(names, f) for f in feeds]

    from onnxruntime.quantization import CalibrationDataReader

    class _Reader(CalibrationDataReader):
        """Feeds each calibration array once, then None (ORT's end-of-data signal)."""

        def __init__(self) -> None:
            self._feeds = iter([{k: np.require(a, requirements="C") for k, a in f.items()} for f in feeds])

        def get_next(self) -> dict | None:
            """The next feed dict, or None when done."""
            return next(self._feeds, None)

    return _Reader()
