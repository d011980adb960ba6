"""INT8 with ONNX Runtime on the CPU: static QDQ (calibrated, per-channel) and dynamic quantization.

Static QDQ fixes every activation's scale from calibration inputs ahead of time; dynamic
quantization stores the weights as INT8 and measures each activation's range on every call.
The QDQ quantizer here also makes the symmetric Q/DQ file TensorRT's INT8 engines are built from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from planner.errors import PlannerError
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Plugin, Precision, Target
from targets.cpu.onnxruntime import OrtSession

CALIBRATION_SEED = 4242  # distinct from the fidelity inputs' seed, so calibration never sees them
CALIBRATION_BATCHES = 32
CALIBRATION_BATCHES_QUICK = 8
INT8_DOT_FEATURES = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
NO_INT8_DOT_NOTE = ("no VNNI: INT8 may not be faster here (the CPU has none of "
                    + ", ".join(INT8_DOT_FEATURES) + ")")
# protobuf cannot hold more than 2 GiB; larger models must keep their weights in a side file.
_EXTERNAL_DATA_BYTES = 1_800_000_000
_MODE_LABEL = {"static": "static QDQ", "dynamic": "dynamic"}


class QuantizationError(PlannerError):
    """ONNX Runtime's quantizer could not produce an INT8 model."""


class Int8Plugin(Plugin):
    """ONNX Runtime INT8 on the CPU: static QDQ per-channel and dynamic, from the shared ONNX export."""

    name = "edge.int8"
    target = Target.EDGE
    summary = "ONNX Runtime INT8 on CPU: static QDQ (calibrated, per-channel) and dynamic"
    requires = ("onnx", "onnxruntime")

    def check(self, hw: Any, model: Any) -> list[str]:
        """Needs onnx and onnxruntime, and a model that is or can become an ONNX file."""
        reasons = super().check(hw, model)
        if model.onnx_path is None and not model.has_torch:
            reasons.append("the model has neither a PyTorch module nor an ONNX file to quantize")
        return reasons

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Quantize the shared export both ways under ctx.workdir/int8; each failure is reported."""
        from planner.export import failure_reason, shared_onnx

        export = shared_onnx(ctx)
        out_dir = Path(ctx.workdir) / "int8"
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = export.path.stem
        threads = max(1, int(ctx.hw.cpu.usable_cores))
        reduce_range = needs_reduced_range(ctx.hw)
        source, pre_notes = preprocess(export.path, out_dir / f"{stem}.pre.onnx")
        cpu_notes = int8_cpu_notes(ctx.hw)
        if reduce_range:
            cpu_notes.append("weights quantized to 7 bits (reduce_range): without VNNI, x86 INT8 "
                             "kernels sum pairs in 16 bits, which full-range weights can overflow")
        common = (*export.notes(), *pre_notes, *cpu_notes)
        failures: list[str] = []

        arrays, calib_note = calibration_inputs(ctx)
        static_path = out_dir / f"{stem}.int8-static.onnx"
        try:
            quantize_qdq(source, static_path, export.input_name, arrays, reduce_range=reduce_range)
        except Exception as exc:  # noqa: BLE001 - the quantizer raises many unrelated types
            failures.append(f"static QDQ: {failure_reason(exc)}")
        else:
            yield self._spec("static", static_path, threads, reduce_range, export.dynamic_batch,
                             (calib_note, "static QDQ: activation scales fixed at calibration, "
                              "weights per output channel", *common),
                             calibration_batches=len(arrays))

        dynamic_path = out_dir / f"{stem}.int8-dynamic.onnx"
        try:
            quantize_weights_dynamic(source, dynamic_path, reduce_range=reduce_range)
        except Exception as exc:  # noqa: BLE001 - the quantizer raises many unrelated types
            failures.append(f"dynamic: {failure_reason(exc)}")
        else:
            yield self._spec("dynamic", dynamic_path, threads, reduce_range, export.dynamic_batch,
                             ("dynamic: weights INT8 ahead of time, activation ranges measured on "
                              "every call (no calibration, some per-call overhead)", *common))
        if failures:
            raise QuantizationError("INT8 quantization failed: " + "; ".join(failures))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "Int8Session":
        """An ONNX Runtime CPU session over the quantized file."""
        return Int8Session(spec.artifacts["onnx"], threads=spec.threads,
                           mode=spec.config.get("mode", "static"))

    def _spec(self, mode: str, path: Path, threads: int, reduce_range: bool, dynamic_batch: bool,
              notes: tuple[str, ...], *, calibration_batches: int = 0) -> CandidateSpec:
        config: dict = {"mode": mode, "provider": "CPUExecutionProvider", "intra_op_threads": threads,
                        "reduce_range": reduce_range}
        if mode == "static":
            config["calibration_batches"] = calibration_batches
        label = f"onnxruntime int8 {_MODE_LABEL[mode]} (cpu, {threads}t)"
        return CandidateSpec(plugin=self.name, label=label, config=config,
                             precision=Precision.INT8, artifacts={"onnx": str(path)},
                             threads=threads, dynamic_batch=dynamic_batch, notes=notes)


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


def calibration_inputs(ctx: PlanContext) -> tuple[list[np.ndarray], str]:
    """The calibration batches and a note saying what they were: --val-data when given, else random."""
    count = CALIBRATION_BATCHES_QUICK if ctx.quick else CALIBRATION_BATCHES
    val_data = getattr(ctx, "val_data", None)
    if val_data:
        from planner.valdata import load_val_data

        arrays = [batch for batch, _ in load_val_data(Path(val_data))][:count]
        if arrays:
            return arrays, f"calibrated on {len(arrays)} batches of --val-data"
    arrays = ctx.model.make_inputs(count=count, seed=CALIBRATION_SEED)
    return arrays, (f"calibrated on {count} random inputs (not real data): activation ranges may "
                    "not match real inputs; pass --val-data to calibrate on real samples")


def preprocess(src: Path, dst: Path) -> tuple[Path, tuple[str, ...]]:
    """ORT's quantization pre-processing (shape inference, BN folding); the original on failure."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from planner.export import failure_reason

    large = _model_bytes(src) > _EXTERNAL_DATA_BYTES
    try:
        quant_pre_process(str(src), str(dst), save_as_external_data=large)
        return dst, ()
    except Exception as exc:  # noqa: BLE001 - symbolic shape inference raises many types
        first = failure_reason(exc)
    try:
        # Symbolic shape inference is the usual failure; ONNX's own inference is often enough.
        quant_pre_process(str(src), str(dst), skip_symbolic_shape=True, save_as_external_data=large)
        return dst, (f"quantization pre-processing without symbolic shapes ({first})",)
    except Exception as exc:  # noqa: BLE001 - as above
        return Path(src), (f"quantization pre-processing skipped ({failure_reason(exc)}): "
                           "quantizing the export as it is",)


def quantize_qdq(src: Path, dst: Path, input_name: str, arrays: Sequence[np.ndarray], *,
                 reduce_range: bool = False, for_tensorrt: bool = False) -> Path:
    """Static INT8 in QDQ form, per-channel weights, MinMax-calibrated on `arrays`; returns `dst`.

    `for_tensorrt` makes the form TensorRT's explicit quantization accepts: symmetric activations
    (zero point 0), fp32 weights behind a Q/DQ pair TensorRT folds, and float biases.
    """
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if not arrays:
        raise QuantizationError("static quantization needs at least one calibration input")
    extra: dict = {}
    if for_tensorrt:
        extra = {"ActivationSymmetric": True, "WeightSymmetric": True, "AddQDQPairToWeight": True,
                 "QuantizeBias": False, "DedicatedQDQPair": True}
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    quantize_static(str(src), str(dst), _calibration_reader(input_name, arrays),
                    quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=reduce_range,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax,
                    use_external_data_format=_model_bytes(Path(src)) > _EXTERNAL_DATA_BYTES,
                    extra_options=extra)
    return Path(dst)


def quantize_weights_dynamic(src: Path, dst: Path, *, reduce_range: bool = False) -> Path:
    """Dynamic INT8: weights quantized now, activations per call; returns `dst`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, reduce_range=reduce_range,
                     use_external_data_format=_model_bytes(Path(src)) > _EXTERNAL_DATA_BYTES)
    return Path(dst)


def _calibration_reader(input_name: str, arrays: Sequence[np.ndarray]) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class _Reader(CalibrationDataReader):
        """Feeds each calibration array once, then None (ORT's end-of-data signal)."""

        def __init__(self) -> None:
            self._feeds = iter([{input_name: np.ascontiguousarray(a)} for a in arrays])

        def get_next(self) -> dict | None:
            """The next feed dict, or None when done."""
            return next(self._feeds, None)

    return _Reader()


def _model_bytes(path: Path) -> int:
    path = Path(path)
    data = path.with_name(path.name + ".data")
    return path.stat().st_size + (data.stat().st_size if data.is_file() else 0)


class Int8Session(OrtSession):
    """An ONNX Runtime CPU session over a quantized file: the fp32 ORT session with INT8 facts."""

    def __init__(self, path: str | Path, *, threads: int | None, mode: str) -> None:
        # One graph, one request at a time: inter-op threads would only compete with intra-op ones.
        super().__init__(str(path), {"graph_optimization_level": "ORT_ENABLE_ALL",
                                     "execution_mode": "ORT_SEQUENTIAL",
                                     "intra_op_threads": threads, "inter_op_threads": 1})
        self.mode = mode
        self.path = Path(path)

    def info(self) -> dict:
        """The settings the session really runs with, plus the quantization and file size."""
        return {**super().info(), "precision": "int8", "quantization": self.mode,
                "model_file_bytes": _model_bytes(self.path)}