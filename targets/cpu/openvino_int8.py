"""INT8 on OpenVINO for the CPU: NNCF post-training quantization, and ONNX Runtime's QDQ file read by OpenVINO.

Both start from the plan's shared ONNX export and the same calibration inputs as the ONNX Runtime INT8
plugin. Each INT8 model is compiled at f32 and, where the CPU computes bf16 natively, at bf16: that is
the precision of the ops OpenVINO leaves unquantized. What really ran in INT8 is read back from the
compiled model's runtime graph, never assumed from the request.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from planner.errors import runtime_error_line
from planner.onnx.attention import has_attention
from planner.onnx.feeds import feed_for, graph_name
from planner.onnx.opset import PreparationError, qdq_ready, step_problem
from planner.onnx.quantize import (
    QuantizationError,
    calibration_inputs,
    int8_cpu_notes,
    needs_reduced_range,
    preprocess,
    qdq_recipe_notes,
    quantize_qdq,
    quiet_library_output,
)
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
from targets.cpu import compute_threads, native_bf16
from targets.cpu.openvino import OpenVinoSession, compile_code, openvino_package

if TYPE_CHECKING:
    from planner.models.loaded import Feed
    from planner.models.spec import ModelInputs

NNCF = "nncf"
NNCF_CONTROLLED = "nncf_accuracy_control"
QDQ = "ort_qdq"
_SOURCE_LABEL = {NNCF: "nncf", NNCF_CONTROLLED: "nncf-ac", QDQ: "qdq"}
_SOURCE_WORDS = {NNCF: "NNCF post-training", NNCF_CONTROLLED: "NNCF with accuracy control",
                 QDQ: "ONNX Runtime's quantized file"}
# Without labels, accuracy control holds the INT8 model's mean cosine to the float one at this level:
# above the INT8 fidelity gate (0.99), with room for the gate's inputs to differ from calibration's.
COSINE_TARGET = 0.995
# The most quantized ops accuracy control may give back to float: each costs a validation pass.
MAX_RESTORED = 12
_OV_PRECISION = {Precision.FP32: "f32", Precision.BF16: "bf16"}
NNCF_MISSING_NOTE = ("nncf not installed (pip install nncf): only the ONNX Runtime QDQ file runs on OpenVINO; "
                     "NNCF's own post-training quantization is not measured")
# Runtime-graph nodes that hold or pass data rather than compute: not counted as executed ops.
_NOT_EXECUTED = frozenset({"Const", "Input", "Output", "Parameter", "Result"})
_INT8 = frozenset({"i8", "u8"})
# The ops that carry nearly all of the arithmetic; whether they run in INT8 decides the speed-up.
_COMPUTE_OPS = frozenset({"Convolution", "FullyConnected", "MatMul", "Deconvolution", "GroupConvolution"})


class OpenVinoInt8Plugin(Plugin):
    """INT8 models compiled by OpenVINO for the CPU: NNCF-quantized IR and the ORT QDQ ONNX file."""

    name = "cpu.openvino_int8"
    title = "OpenVINO INT8"
    build_cost_s = 6.0  # NNCF calibration and its accuracy check: seconds for a small CNN
    build_precision = "int8"
    target = Target.CPU
    actions = (ActionId.VENDOR_INT8,)
    arithmetic = Arithmetic.REDUCED_PRECISION
    runtime = "openvino"
    phase = Phase.EXTRA_IMPACT
    fuses_graph = True
    summary = "OpenVINO CPU INT8: NNCF post-training quantization and ORT's QDQ file, f32 and (native) bf16 rest"
    # nncf is optional: without it the QDQ candidates still run (a note says what is missing).
    requires = ("openvino", "onnx", "onnxruntime")
    needs_onnx = True

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Quantize the shared export with NNCF and with ORT's QDQ quantizer; a failing family is reported.

        The working family's candidates are yielded first; a failure raises QuantizationError at the end
        with every family's reason, so the plan records it beside the candidates that were built.
        """
        from planner.onnx.export import shared_onnx

        export = shared_onnx(ctx)
        out_dir = Path(ctx.workdir) / "openvino_int8"
        out_dir.mkdir(parents=True, exist_ok=True)
        threads = compute_threads(ctx.hw)
        precisions = [Precision.FP32] + ([Precision.BF16] if native_bf16(ctx.hw) else [])
        feeds, calib_note = calibration_inputs(ctx)
        attention = has_attention(export.path)  # NNCF's transformer model type; QDQ's transformer recipe
        common = (calib_note, *export.notes(), *int8_cpu_notes(ctx.hw))
        if ctx.model.inputs.sequence is not None:
            common += (f"sequence length fixed at {ctx.model.inputs.sequence} when compiled: OpenVINO plans "
                       "for one token count, so another length needs another compile",)
        failures: list[str] = []

        if importlib.util.find_spec("nncf") is None:
            common += (NNCF_MISSING_NOTE,)
            ctx.log(NNCF_MISSING_NOTE)
        else:
            try:
                import openvino as ov

                # Converted once: accuracy control below starts from the same float model.
                original = ov.convert_model(str(export.path))
                ir_path = quantize_nncf(original.clone(), out_dir / f"{export.path.stem}.nncf-int8.xml", feeds,
                                        inputs=ctx.model.inputs, transformer=attention)
            except Exception as exc:  # noqa: BLE001 - NNCF and OpenVINO raise many unrelated types
                failures.append(f"NNCF: {runtime_error_line(exc)}")
                ctx.log(f"cpu.openvino_int8: NNCF quantization failed: {runtime_error_line(exc)}\n"
                        f"details: {str(exc)[:4000]}")
            else:
                preset = "mixed" if attention else "performance"
                notes = (f"NNCF post-training quantization ({preset} preset"
                         + (", transformer model type: the graph has attention" if attention else "")
                         + f", {len(feeds)} calibration batches), saved as OpenVINO IR", *common)
                yield from self._specs(NNCF, ir_path, precisions, threads, export.dynamic_batch, notes,
                                       calibration_batches=len(feeds), transformer=attention)
                try:
                    controlled = quantize_controlled(ctx, original, ir_path,
                                                     out_dir / f"{export.path.stem}.nncf-ac-int8.xml", feeds,
                                                     transformer=attention)
                except Exception as exc:  # noqa: BLE001 - as above: NNCF raises many unrelated types
                    failures.append(f"NNCF accuracy control: {runtime_error_line(exc)}")
                    ctx.log(f"cpu.openvino_int8: NNCF accuracy control failed: {runtime_error_line(exc)}")
                    controlled = None
                if controlled is not None:
                    path, why = controlled
                    yield from self._specs(NNCF_CONTROLLED, path, precisions, threads, export.dynamic_batch,
                                           (why, *common), calibration_batches=len(feeds), transformer=attention)

        reduce_range = needs_reduced_range(ctx.hw)
        stem = export.path.stem
        qdq_path = out_dir / f"{stem}.int8-qdq.onnx"
        try:
            ready = qdq_ready(ctx, export)
        except PreparationError as exc:
            failures.append(f"ORT QDQ: {exc.problem}")
        else:
            source, pre_notes = preprocess(ready.path, out_dir / f"{stem}.pre.onnx")
            problem = step_problem(
                ctx, ("quantizing", lambda: quantize_qdq(source, qdq_path, feeds, reduce_range=reduce_range,
                                                         attention=attention)),
                ("reading the quantized file in OpenVINO", lambda: _check_ov_reads(qdq_path)))
            if problem:
                failures.append(f"ORT QDQ: {problem}")
            else:
                notes = ("ONNX Runtime's static QDQ file (per-channel weights) read directly by OpenVINO",
                         *qdq_recipe_notes(attention), *ready.notes, *pre_notes, *common)
                if reduce_range:
                    notes += ("weights quantized to 7 bits (reduce_range): this x86 CPU has no VNNI",)
                yield from self._specs(QDQ, qdq_path, precisions, threads, export.dynamic_batch, notes,
                                       calibration_batches=len(feeds), transformer=attention, reduce_range=reduce_range)
        if failures:
            raise QuantizationError("OpenVINO INT8 failed: " + "; ".join(failures))

    def describe(self, spec: CandidateSpec, inputs: "ModelInputs | None" = None) -> Description:
        """'OpenVINO INT8 (NNCF post-training), 2 threads': how it was quantized, then its compile_model call."""
        config = spec.config
        source = str(config.get("quantization", NNCF))
        rest = str(config.get("precision", "fp32"))
        title = wording.title(f"OpenVINO INT8 ({_SOURCE_WORDS.get(source, source)})",
                              "" if rest == "fp32" else f"other ops in {wording.precision(rest)}",
                              wording.threads(config.get("threads")),
                              "static shape" if config.get("static_shape") else "")
        model_file = spec.artifacts.get("model")
        name = wording.file_name(model_file, "model.int8.xml")
        transformer = bool(config.get("transformer"))
        if source == NNCF:
            made = wording.nncf_quantize_code("model.onnx", name, transformer=transformer)
        elif source == QDQ:
            made = wording.ort_quantize_code("static", "model.onnx", name, transformer=transformer,
                                             reduce_range=bool(config.get("reduce_range")))
        else:
            made = wording.comment(f"{name}: NNCF's quantize_with_accuracy_control gave the costliest INT8 ops "
                                   "back to float; its package holds the file")
        return Description(title, wording.code(made, compile_code(spec, inputs, model_file)))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "OpenVinoInt8Session":
        """Read the quantized IR or QDQ file and compile it for the CPU with the spec's properties."""
        return OpenVinoInt8Session(spec.artifacts["model"], spec.config, inputs=model.inputs,
                                   dynamic_batch=spec.dynamic_batch)

    def artifact_files(self, spec: CandidateSpec) -> list[Path]:
        """The quantized model's files: an IR's .xml and the .bin that holds its weights, or the QDQ ONNX file."""
        path = Path(spec.artifacts["model"])
        if path.suffix == ".xml":
            return [p for p in (path, path.with_suffix(".bin")) if p.is_file()]
        return super().artifact_files(spec)

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The INT8 model's files and an OpenVINO run.py that reshapes and compiles them as the session did."""
        return openvino_package(Path(spec.artifacts["model"]), self.artifact_files(spec), dest, spec.config,
                                inputs=model.inputs, dynamic_batch=spec.dynamic_batch)

    def _specs(self, source: str, path: Path, precisions: Sequence[Precision], threads: int, dynamic_batch: bool,
               notes: tuple[str, ...], *, calibration_batches: int, **recipe: bool) -> Iterable[CandidateSpec]:
        """Each precision with the batch open, then the fastest precision compiled at a fixed shape. `recipe`: how
        the file was quantized (transformer, reduce_range), recorded where true for the candidate's apply snippet."""
        for precision in precisions:
            yield self._spec(source, path, precision, threads, dynamic_batch, notes,
                             calibration_batches=calibration_batches, recipe=recipe)
        if dynamic_batch:
            # A shape fixed at compile time skips per-call shape inference: it pays most on small models.
            yield self._spec(source, path, precisions[-1], threads, False, notes,
                             calibration_batches=calibration_batches, static_shape=True, recipe=recipe)

    def _spec(self, source: str, path: Path, precision: Precision, threads: int, dynamic_batch: bool,
              notes: tuple[str, ...], *, calibration_batches: int, static_shape: bool = False,
              recipe: dict | None = None) -> CandidateSpec:
        # "precision" is the one OpenVINO computes the unquantized ops in (INFERENCE_PRECISION_HINT);
        # the spec's own precision is INT8.
        config = {"quantization": source, "precision": str(precision), "hint": "LATENCY", "threads": threads,
                  "static_shape": static_shape, "calibration_batches": calibration_batches,
                  **{k: True for k, v in (recipe or {}).items() if v}}
        if precision is Precision.BF16:
            notes += ("unquantized ops in bf16 (native on this CPU); the f32 candidate pins "
                      "INFERENCE_PRECISION_HINT=f32",)
        if static_shape:
            notes += ("input shape fixed at compile time: no per-call shape inference, "
                      "but only this batch size runs",)
        label = f"openvino int8 {_SOURCE_LABEL[source]} {_OV_PRECISION[precision]} latency {threads}t"
        return CandidateSpec(plugin=self.name, label=label + (" static" if static_shape else ""), config=config,
                             precision=Precision.INT8, artifacts={"model": str(path)}, threads=threads,
                             dynamic_batch=dynamic_batch, notes=notes)


def _check_ov_reads(path: Path) -> None:
    """Raise OpenVINO's own error where its ONNX frontend cannot convert the file (compiling is the measurement's)."""
    import openvino as ov

    ov.Core().read_model(str(path))


def quantize_nncf(model: Any, dst: Path, feeds: Sequence["Feed"], *, inputs: "ModelInputs",
                  transformer: bool = False) -> Path:
    """NNCF post-training INT8 of an OpenVINO model (the ONNX export converted), saved as IR at `dst` (.xml).

    A `transformer` (a graph with attention, `planner.onnx.attention.has_attention`) uses NNCF's transformer
    model type, which keeps LayerNorm, Softmax and the residual Adds out of INT8, and the mixed preset
    (asymmetric activations, which suit the skewed outputs of GELU and softmax); others the performance preset.
    """
    import nncf
    import openvino as ov

    if not feeds:
        raise QuantizationError("NNCF quantization needs at least one calibration input")
    names = [graph_name(port.get_names(), inputs) for port in model.inputs]

    def transform(feed: "Feed") -> dict[int, Any]:
        # Keyed by index like the session: a graph input's names need not include the model's own.
        return dict(enumerate(feed_for(names, feed).values()))

    with quiet_library_output():
        try:
            quantized = nncf.quantize(
                model, nncf.Dataset(list(feeds), transform),
                preset=nncf.QuantizationPreset.MIXED if transformer else nncf.QuantizationPreset.PERFORMANCE,
                model_type=nncf.ModelType.TRANSFORMER if transformer else None,
                subset_size=len(feeds))
        except Exception as exc:  # noqa: BLE001 - NNCF raises its own ValidationError and others
            if "dataset must not be empty" not in str(exc) or not _has_branches(model):
                raise
            # NNCF calibrates each If branch on the samples that take it; with an input fixed (a sample
            # rate of 16000), the other branch gets none and NNCF refuses the whole model.
            raise QuantizationError(
                "NNCF calibrates each branch of the model's If ops on the samples that take that branch, and "
                "some branch got none (an input such as a sample rate, fixed to one value, always takes the "
                "same branch)", "nothing to measure with NNCF for this model") from exc
    dst.parent.mkdir(parents=True, exist_ok=True)
    ov.save_model(quantized, str(dst))
    return dst


def _has_branches(model: Any) -> bool:
    """Whether an OpenVINO model holds If ops (calibrated branch by branch)."""
    return any(op.get_type_name() == "If" for op in model.get_ops())


@dataclass(frozen=True)
class _Metric:
    """What accuracy control holds the INT8 model to: accuracy on labels, or agreement with the float model."""

    name: str  # "accuracy" or "cosine"
    basis: str  # the data it is measured on, in words
    max_drop: float


def control_metric(ctx: PlanContext, labels: Sequence[Any] | None) -> _Metric:
    """Accuracy on labelled validation data under the user's budget; else cosine to the float model."""
    if labels is not None and ctx.accuracy_budget is not None:
        return _Metric("accuracy", f"the calibration part of the labelled {ctx.val_data_basis}",
                       float(ctx.accuracy_budget))
    return _Metric("cosine", "the calibration inputs", 1.0 - COSINE_TARGET)


def quantize_controlled(ctx: PlanContext, original: Any, plain_ir: Path, dst: Path,
                        feeds: Sequence["Feed"], *, transformer: bool = False) -> tuple[Path, str] | None:
    """NNCF INT8 with accuracy control where plain INT8 loses too much: (IR path, why), or None.

    The plain NNCF model is judged first on the same metric; only when it loses more than the
    allowed drop does NNCF rank the quantized ops by what they cost and give the worst back to
    float (its ignored scope, chosen by measurement) until the drop fits. What was judged and
    the outcome are logged either way.
    """
    import numpy as np
    import openvino as ov

    from planner.models.valdata import split_val_data

    labels = None
    if ctx.val_data:
        # The calibration part, which `feeds` were taken from: the judged part stays unseen until the plan judges.
        pairs = list(split_val_data(Path(ctx.val_data), inputs=ctx.model.inputs).calibration[:len(feeds)])
        if pairs and all(lab is not None for _, lab in pairs):
            labels = [lab for _, lab in pairs]
    metric = control_metric(ctx, labels)
    core = ov.Core()
    names = [graph_name(port.get_names(), ctx.model.inputs) for port in original.inputs]
    float_model = core.compile_model(original, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    items = []
    for i, feed in enumerate(feeds):
        arrays = dict(enumerate(feed_for(names, feed).values()))
        items.append({"inputs": arrays, "reference": np.asarray(float_model(arrays)[0]),
                      "labels": labels[i] if labels is not None else None})

    def validate(compiled: Any, data: Iterable[dict]) -> tuple[float, list[float]]:
        values = [_item_score(np.asarray(compiled(item["inputs"])[0]), item, metric.name) for item in data]
        return float(np.mean(values)), values

    before = validate(float_model, items)[0]
    plain = validate(core.compile_model(core.read_model(str(plain_ir)), "CPU",
                                        {"INFERENCE_PRECISION_HINT": "f32"}), items)[0]
    drop = before - plain
    judged = (f"plain NNCF INT8 {metric.name} on {metric.basis}: {plain:.4f} against the float model's "
              f"{before:.4f}")
    if drop <= metric.max_drop:
        ctx.log(f"cpu.openvino_int8: {judged}; within the allowed drop of {metric.max_drop:.3g}, "
                "so accuracy control is not needed")
        return None
    if ctx.quick:
        # It validates the model once per op it tries to give back: minutes on a mid-size CNN.
        ctx.log(f"cpu.openvino_int8: {judged}; more than the allowed drop of {metric.max_drop:.3g}, but NNCF "
                "accuracy control is not run in a quick plan (it validates the model once per op it tries): "
                "plan without --quick to run it")
        return None
    ctx.log(f"cpu.openvino_int8: {judged}; more than the allowed drop of {metric.max_drop:.3g}: "
            "running NNCF quantization with accuracy control")
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

    dataset = nncf.Dataset(items, lambda item: item["inputs"])
    with quiet_library_output():
        quantized = nncf.quantize_with_accuracy_control(
            original, dataset, dataset, validate, max_drop=metric.max_drop,
            drop_type=nncf.DropType.ABSOLUTE,
            preset=nncf.QuantizationPreset.MIXED if transformer else nncf.QuantizationPreset.PERFORMANCE,
            model_type=nncf.ModelType.TRANSFORMER if transformer else None, subset_size=len(items),
            advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(
                max_num_iterations=MAX_RESTORED))
    after = validate(core.compile_model(quantized, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}), items)[0]
    ov.save_model(quantized, str(dst))
    kept = "kept within" if before - after <= metric.max_drop else "still above"
    why = (f"nncf-ac: NNCF quantization with accuracy control: {judged}, so the quantized ops that cost "
           f"most were given back to float (at most {MAX_RESTORED}); {metric.name} now {after:.4f}, "
           f"{kept} the allowed drop of {metric.max_drop:.3g}")
    ctx.log(f"cpu.openvino_int8: {why}")
    return dst, why


def _item_score(out: Any, item: dict, metric: str) -> float:
    """One calibration batch's score: top-1 accuracy on its labels, or cosine to the float output."""
    import numpy as np

    if metric == "accuracy":
        return float(np.mean(out.reshape(len(out), -1).argmax(axis=1) == item["labels"]))
    a = np.asarray(item["reference"], dtype=np.float64).ravel()
    b = np.asarray(out, dtype=np.float64).ravel()
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / denom) if denom > 0 else float(np.array_equal(a, b))


def runtime_precisions(runtime_model: Any) -> dict[str, Any]:
    """What the compiled graph really runs: executed ops by runtime precision, and the INT8 share of the compute.

    Reads each runtime op's rt_info ("layerType", "runtimePrecision"); constants, inputs and outputs
    are not executed work and are left out.
    """
    by_precision: Counter[str] = Counter()
    compute: Counter[str] = Counter()
    for op in runtime_model.get_ordered_ops():
        rt = op.get_rt_info()
        layer = _rt_text(rt, "layerType")
        if layer in _NOT_EXECUTED:
            continue
        precision = _rt_text(rt, "runtimePrecision")
        by_precision[precision] += 1
        if layer in _COMPUTE_OPS:
            compute["int8" if precision in _INT8 else "other"] += 1
    return {"int8_ops": sum(n for p, n in by_precision.items() if p in _INT8),
            "op_precisions": dict(by_precision.most_common()),
            "int8_compute_ops": f"{compute['int8']} of {compute['int8'] + compute['other']} "
                                "convolution/matmul ops in int8"}


def _rt_text(rt: Any, key: str) -> str:
    """One rt_info entry as text ('' where the runtime did not record it)."""
    if key not in rt:
        return ""
    value = rt[key]
    return str(value.astype(str)) if hasattr(value, "astype") else str(value)


class OpenVinoInt8Session(OpenVinoSession):
    """The OpenVINO CPU session over an INT8 model, whose info() says which ops really ran in INT8."""

    def __init__(self, path: str, config: dict, *, inputs: "ModelInputs", dynamic_batch: bool = True) -> None:
        super().__init__(path, config, inputs=inputs, dynamic_batch=dynamic_batch)
        self.quantization = str(config.get("quantization", ""))
        self.path = Path(path)

    def info(self) -> dict:
        """The compiled model's properties plus the executed ops by runtime precision (read back, not assumed)."""
        data = super().info()
        data["precision"] = "int8"
        data["quantization"] = self.quantization
        data.update(runtime_precisions(self._compiled.get_runtime_model()))
        if data["int8_ops"] == 0:
            data["note"] = (data.get("note", "") + "; " if data.get("note") else "") + (
                "no op runs in int8: OpenVINO fell back to float for the whole graph")
        return data
