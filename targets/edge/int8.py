"""INT8 with ONNX Runtime on the CPU: static QDQ (calibrated, per-channel) and dynamic quantization.

Static QDQ fixes every activation's scale from calibration inputs ahead of time; dynamic
quantization stores the weights as INT8 and measures each activation's range on every call.
The QDQ quantizer here also makes the symmetric Q/DQ file TensorRT's INT8 engines are built from.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from planner.onnx.attention import has_attention
from planner.onnx.files import model_bytes
from planner.onnx.opset import PreparationError, QdqReady, qdq_ready, step_problem
from planner.onnx.package import ort_package
from planner.onnx.quantize import (
    QuantizationError,
    calibration_inputs,
    check_ort_loads,
    int8_cpu_notes,
    needs_reduced_range,
    preprocess,
    qdq_recipe_notes,
    quantize_qdq,
    quantize_weights_dynamic,
)
from planner.onnx.session import OrtSession
from planner.plugins import (
    ActionId,
    Arithmetic,
    CandidateSpec,
    Description,
    ModelRef,
    Phase,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.plugins.packaging import PackageFiles
from targets import wording

if TYPE_CHECKING:
    from planner.models.spec import ModelInputs

_MODE_LABEL = {"static": "static QDQ", "dynamic": "dynamic"}
_MODE_WORDS = {"static": "static quantization (calibrated, per channel)",
               "dynamic": "dynamic quantization (activations scaled on every call)"}
_LOADING = "loading the quantized file in ONNX Runtime"


class Int8Plugin(Plugin):
    """ONNX Runtime INT8 on the CPU: static QDQ per-channel and dynamic, from the shared ONNX export."""

    name = "edge.int8"
    title = "ONNX Runtime INT8"
    build_cost_s = 2.5  # static quantization with calibration
    build_precision = "int8"
    target = Target.EDGE
    actions = (ActionId.INT8_STATIC, ActionId.EDGE_INT8)
    arithmetic = Arithmetic.REDUCED_PRECISION
    runtime = "onnxruntime"
    phase = Phase.EXTRA_IMPACT
    fuses_graph = True
    summary = "ONNX Runtime INT8 on CPU: static QDQ (calibrated, per-channel) and dynamic"
    requires = ("onnx", "onnxruntime")  # onnx for the quantizer even when the model is ONNX
    needs_onnx = True


    def prediction_family(self, spec: CandidateSpec) -> str:
        """Dynamic INT8 quantizes activations on every call: a family of its own."""
        return "int8-dynamic" if "dynamic" in str(spec.config.get("mode", "")).lower() else "int8"

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Quantize the shared export both ways under ctx.workdir/int8; each failure is reported.

        A file at an opset older than per-channel QDQ needs is converted first (see planner.onnx.opset);
        when that fails, static QDQ fails saying so, and dynamic INT8 (no per-channel axis) still runs
        on the file as it is.
        """
        from planner.onnx.export import shared_onnx

        export = shared_onnx(ctx)
        out_dir = Path(ctx.workdir) / "int8"
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = export.path.stem
        threads = max(1, int(ctx.hw.cpu.usable_cores))
        reduce_range = needs_reduced_range(ctx.hw)
        failures: list[str] = []
        ready: QdqReady | None = None
        try:
            ready = qdq_ready(ctx, export)
            ready_notes = ready.notes
        except PreparationError as exc:
            failures.append(f"static QDQ: {exc.problem}")
            ready_notes = (f"quantized at the file's own opset {export.opset}: making it ready for "
                           f"per-channel QDQ failed ({exc.problem})",)
        source, pre_notes = preprocess(ready.path if ready else export.path, out_dir / f"{stem}.pre.onnx")
        cpu_notes = int8_cpu_notes(ctx.hw)
        if reduce_range:
            cpu_notes.append("weights quantized to 7 bits (reduce_range): without VNNI, x86 INT8 "
                             "kernels sum pairs in 16 bits, which full-range weights can overflow")
        common = (*export.notes(), *ready_notes, *pre_notes, *cpu_notes)

        feeds, calib_note = calibration_inputs(ctx)
        static_path = out_dir / f"{stem}.int8-static.onnx"
        if ready is not None:
            attention = has_attention(source)
            problem = step_problem(
                ctx, ("quantizing", lambda: quantize_qdq(source, static_path, feeds, reduce_range=reduce_range,
                                                         attention=attention)),
                (_LOADING, lambda: check_ort_loads(static_path)))
            if problem:
                failures.append(f"static QDQ: {problem}")
            else:
                yield self._spec("static", static_path, threads, reduce_range, export.dynamic_batch,
                                 (calib_note, "static QDQ: activation scales fixed at calibration, "
                                  "weights per output channel", *qdq_recipe_notes(attention), *common),
                                 calibration_batches=len(feeds), transformer=attention)

        dynamic_path = out_dir / f"{stem}.int8-dynamic.onnx"
        problem = step_problem(
            ctx, ("quantizing", lambda: quantize_weights_dynamic(source, dynamic_path, reduce_range=reduce_range)),
            (_LOADING, lambda: check_ort_loads(dynamic_path)))
        if problem:
            failures.append(f"dynamic: {problem}")
        else:
            yield self._spec("dynamic", dynamic_path, threads, reduce_range, export.dynamic_batch,
                             ("dynamic: weights INT8 ahead of time, activation ranges measured on "
                              "every call (no calibration, some per-call overhead)", *common))
        if failures:
            raise QuantizationError("INT8 quantization failed: " + "; ".join(failures))

    def describe(self, spec: CandidateSpec, inputs: "ModelInputs | None" = None) -> Description:
        """'ONNX Runtime INT8, static quantization (calibrated, per channel), 2 threads': the quantizer call, then
        the session."""
        mode = str(spec.config.get("mode", "static"))
        title = wording.title("ONNX Runtime INT8", _MODE_WORDS.get(mode, mode), wording.threads(spec.threads))
        name = wording.file_name(spec.artifacts.get("onnx"), f"model.int8-{mode}.onnx")
        made = wording.ort_quantize_code(mode, "model.onnx", name, reduce_range=bool(spec.config.get("reduce_range")),
                                         transformer=bool(spec.config.get("transformer")))
        return Description(title, wording.code(made, wording.ort_session_code(session_config(spec.threads), name)))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "Int8Session":
        """An ONNX Runtime CPU session over the quantized file."""
        return Int8Session(spec.artifacts["onnx"], threads=spec.threads,
                           mode=spec.config.get("mode", "static"))

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The quantized ONNX file and an ONNX Runtime run.py with the options its session runs with."""
        return ort_package(spec.artifacts["onnx"], dest, session_config(spec.threads))

    def _spec(self, mode: str, path: Path, threads: int, reduce_range: bool, dynamic_batch: bool,
              notes: tuple[str, ...], *, calibration_batches: int = 0, transformer: bool = False) -> CandidateSpec:
        config: dict = {"mode": mode, "provider": "CPUExecutionProvider", "intra_op_threads": threads,
                        "reduce_range": reduce_range}
        if mode == "static":
            config["calibration_batches"] = calibration_batches
        if transformer:
            config["transformer"] = True  # only the matrix products were quantized (the apply snippet says so)
        label = f"onnxruntime int8 {_MODE_LABEL[mode]} (cpu, {threads}t)"
        return CandidateSpec(plugin=self.name, label=label, config=config,
                             precision=Precision.INT8, artifacts={"onnx": str(path)},
                             threads=threads, dynamic_batch=dynamic_batch, notes=notes)


def session_config(threads: int | None) -> dict:
    """The ONNX Runtime options a quantized file runs with (its session's and its package's)."""
    # One graph, one request at a time: inter-op threads would only compete with intra-op ones.
    return {"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
            "intra_op_threads": threads, "inter_op_threads": 1}


class Int8Session(OrtSession):
    """An ONNX Runtime CPU session over a quantized file: the fp32 ORT session with INT8 facts."""

    def __init__(self, path: str | Path, *, threads: int | None, mode: str) -> None:
        super().__init__(str(path), session_config(threads))
        self.mode = mode
        self.path = Path(path)

    def info(self) -> dict:
        """The settings the session really runs with, plus the quantization and file size."""
        return {**super().info(), "precision": "int8", "quantization": self.mode,
                "model_file_bytes": model_bytes(self.path)}
