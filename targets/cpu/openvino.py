"""OpenVINO on the CPU: latency vs throughput hints, f32 vs native bf16, static vs dynamic shape."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from planner.onnx.feeds import graph_name, match_inputs, ordered_arrays
from planner.plugins import (
    ActionId,
    CandidateSpec,
    Description,
    ModelRef,
    PlanContext,
    Plugin,
    Precision,
    Target,
)
from planner.plugins.packaging import PackageFiles, copy_into, runner_text
from targets import wording
from targets.cpu import compute_threads, native_bf16

if TYPE_CHECKING:
    from planner.models.spec import ModelInputs

QUICK_LIMIT = 4
_OV_PRECISION = {Precision.FP32: "f32", Precision.BF16: "bf16"}
_READ_BACK = ("INFERENCE_PRECISION_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT",
              "EXECUTION_MODE_HINT")


class OpenVinoPlugin(Plugin):
    """The model's ONNX file compiled by OpenVINO for the CPU device."""

    name = "cpu.openvino"
    title = "OpenVINO"
    target = Target.CPU
    actions = (ActionId.VENDOR_RUNTIME,)
    runtime = "openvino"
    fuses_graph = True
    summary = "OpenVINO CPU: LATENCY/THROUGHPUT hints, explicit f32 and (where native) bf16"
    requires = ("openvino",)
    needs_onnx = True  # export failures surface from candidates(), with the exporter's reason


    def prediction_family(self, spec: CandidateSpec) -> str:
        """An fp32 candidate with the THROUGHPUT hint is a family of its own: streams trade latency for rate."""
        family = super().prediction_family(spec)
        return "throughput-hint" if family == "runtime" and spec.config.get("hint") == "THROUGHPUT" else family

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """One shared export; f32 always pinned explicitly, bf16 only on CPUs with native bf16."""
        from planner.onnx.export import shared_onnx

        export = shared_onnx(ctx)
        n = compute_threads(ctx.hw)
        precisions = [Precision.FP32] + ([Precision.BF16] if native_bf16(ctx.hw) else [])
        latency = [_config(p, "LATENCY", n) for p in precisions]
        throughput = [_config(p, "THROUGHPUT", n) for p in precisions]
        # A shape fixed at compile time skips per-call shape inference: 10-15% on a ~1 ms model.
        static = [_config(p, "LATENCY", n, static_shape=True) for p in precisions] if export.dynamic_batch else []
        if ctx.quick:
            # Every precision's static compile, f32 first: on a small model the plain precision with a fixed shape
            # is often the batch-1 winner (0.67 ms against bf16 and INT8 picks of 0.82 ms on a 0.6 ms classifier),
            # and the search screens them by promise anyway. The throughput hint comes last, and a quick plan on a
            # CPU with native bf16 leaves it out: batch-1 latency is what a quick plan ranks.
            configs = (latency + static + throughput[:1])[:QUICK_LIMIT]
        else:
            configs = latency + static + throughput
        sequence = ctx.model.inputs.sequence
        for config in configs:
            precision = Precision(config["precision"])
            notes = export.notes()
            if sequence is not None:
                # Every input is reshaped to the measured shape before compiling; only the batch stays open.
                notes += (f"sequence length fixed at {sequence} when compiled: OpenVINO plans for one "
                          "token count, so another length needs another compile",)
            if config["hint"] == "THROUGHPUT":
                notes += ("THROUGHPUT hint: several streams for concurrent requests (batch serving); "
                          "its latency here is one request at a time",)
            if config["static_shape"]:
                notes += ("input shape fixed at compile time: no per-call shape inference, "
                          "but only this batch size runs",)
            if precision is Precision.BF16:
                notes += ("bf16 compute: OpenVINO's default on this CPU; the f32 candidates pin "
                          "INFERENCE_PRECISION_HINT=f32",)
            yield CandidateSpec(plugin=self.name, label=_label(config), config=config,
                                precision=precision, artifacts={"onnx": str(export.path)},
                                threads=n,
                                dynamic_batch=export.dynamic_batch and not config["static_shape"],
                                notes=notes)

    def describe(self, spec: CandidateSpec, inputs: "ModelInputs | None" = None) -> Description:
        """'OpenVINO FP32, latency hint, 2 threads, static shape', and its compile_model call."""
        config = spec.config
        hint = f"{str(config['hint']).lower()} hint"
        title = wording.title(f"OpenVINO {wording.precision(str(spec.precision))}", hint,
                              wording.threads(config["threads"]), "static shape" if config.get("static_shape") else "")
        return Description(title, compile_code(spec, inputs, spec.artifacts.get("onnx")))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "OpenVinoSession":
        """Read the ONNX file and compile it for the CPU with the spec's properties."""
        return OpenVinoSession(spec.artifacts["onnx"], spec.config, inputs=model.inputs,
                               dynamic_batch=spec.dynamic_batch)

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The ONNX file and an OpenVINO run.py that reshapes and compiles it as the session did."""
        return openvino_package(Path(spec.artifacts["onnx"]), self.artifact_files(spec), dest, spec.config,
                                inputs=model.inputs, dynamic_batch=spec.dynamic_batch)


def _config(precision: Precision, hint: str, threads: int, *, static_shape: bool = False) -> dict:
    return {"precision": str(precision), "hint": hint, "threads": threads,
            "static_shape": static_shape}


def _label(config: dict) -> str:
    label = f"openvino {_OV_PRECISION[Precision(config['precision'])]} {config['hint'].lower()}"
    label += f" {config['threads']}t"
    return label + " static" if config["static_shape"] else label


def reshape_dims(graph_names: list[str], inputs: ModelInputs, *,
                 dynamic_batch: bool) -> dict[str, list[int]]:
    """The shape to compile each graph input at: the model's, with -1 batch where the batch is swept.

    Fixing every other dimension lets OpenVINO plan its kernels for the measured shape (a text
    model's sequence length included); a batch axis stays open only where the candidate sweeps it.
    """
    dims = {}
    for name, spec in match_inputs(graph_names, inputs).items():
        shape = list(spec.shape)
        if dynamic_batch and spec.dynamic_batch and shape:
            shape[0] = -1
        dims[name] = shape
    return dims


RUNNER = Path(__file__).parent / "runners" / "run_openvino.py"


def openvino_package(model_file: Path, files: Sequence[Path], dest: Path, config: dict, *, inputs: ModelInputs,
                     dynamic_batch: bool) -> PackageFiles:
    """Copy the model's files into `dest`; run.py reshapes and compiles it with `config`'s properties, as
    `OpenVinoSession` does (the same shapes, read from the same file)."""
    names, shapes = compile_shapes(model_file, inputs, dynamic_batch=dynamic_batch and not config.get("static_shape"))
    dims = dict(zip(names, shapes))
    copied = copy_into(files, dest, root=model_file.parent)
    settings = {"model": copied[0], "inputs": names, "shapes": shapes, "properties": compile_properties(config)}
    notes: tuple[str, ...] = ()
    if not any(-1 in shape for shape in settings["shapes"]):
        notes = ("compiled at a fixed input shape (" + "; ".join(f"{n} {dims[n]}" for n in names) +
                 "): as measured, only this shape runs",)
    return PackageFiles(files=copied, run_py=runner_text(RUNNER, settings), runtime="openvino",
                        requirements=("openvino", "numpy"), imports=("openvino", "numpy"), settings=settings,
                        notes=notes)


def compile_shapes(model_file: str | Path, inputs: ModelInputs, *,
                   dynamic_batch: bool) -> tuple[list[str], list[list[int]]]:
    """The graph's inputs as the model calls them, in the file's order, and the shape each is compiled at."""
    path = Path(model_file)
    names = [graph_name(ports, inputs) for ports in _port_names(str(path), path.stat().st_mtime_ns)]
    dims = reshape_dims(names, inputs, dynamic_batch=dynamic_batch)
    return names, [dims[n] for n in names]


@functools.lru_cache(maxsize=16)
def _port_names(model_file: str, mtime_ns: int) -> tuple[frozenset[str], ...]:
    """Each graph input's tensor names, read once per version of a file (describing and packaging read the same
    file; `mtime_ns` tells a rewritten file apart)."""
    import openvino as ov

    return tuple(frozenset(port.get_names()) for port in ov.Core().read_model(model_file).inputs)


def compile_code(spec: CandidateSpec, inputs: ModelInputs | None, model_file: str | None) -> str:
    """The OpenVINO lines that compile a candidate's file as its session did (its shapes where `inputs` are known)."""
    shapes = None
    if inputs is not None and model_file and Path(model_file).is_file():
        _, shapes = compile_shapes(model_file, inputs, dynamic_batch=spec.dynamic_batch)
    return wording.openvino_compile_code(compile_properties(spec.config), wording.file_name(model_file, "model.onnx"),
                                         shapes)


def compile_properties(config: dict) -> dict:
    """The OpenVINO CPU properties a candidate config stands for."""
    return {"PERFORMANCE_HINT": config["hint"],
            "INFERENCE_PRECISION_HINT": _OV_PRECISION[Precision(config["precision"])],
            "INFERENCE_NUM_THREADS": int(config["threads"])}


class OpenVinoSession:
    """A compiled OpenVINO model and one InferRequest, satisfying the Session protocol."""

    def __init__(self, path: str, config: dict, *, inputs: ModelInputs, dynamic_batch: bool = True) -> None:
        import openvino as ov

        self._ov = ov
        core = ov.Core()
        model = core.read_model(str(path))
        self._static = bool(config.get("static_shape"))
        names = [graph_name(port.get_names(), inputs) for port in model.inputs]
        dims = reshape_dims(names, inputs, dynamic_batch=dynamic_batch and not self._static)
        # Keyed by index: a graph input's own names need not include the one the model calls it.
        model.reshape({i: ov.PartialShape(dims[name]) for i, name in enumerate(names)})
        self.requested = compile_properties(config)
        self._core, self._model = core, model
        self._compiled = core.compile_model(model, "CPU", self.requested)
        self._request = self._compiled.create_infer_request()
        self._names = names
        # The compiled model keeps the read model's input order, so the names line up by index.
        self._dtypes = [_np_dtype(port.get_element_type()) for port in self._compiled.inputs]

    def prepare(self, feed: Mapping[str, np.ndarray]) -> dict[int, Any]:
        """Every input by index as an OpenVINO tensor sharing a C-contiguous array in its declared element type
        (integers stay integers), made once, so a call only points the request at it."""
        arrays = ordered_arrays(self._names, feed)
        # np.require keeps a scalar (a sample rate) 0-d, where ascontiguousarray would make it [1].
        return {i: self._ov.Tensor(np.require(a, dtype=dtype, requirements="C"), shared_memory=True)
                for i, (a, dtype) in enumerate(zip(arrays, self._dtypes))}

    def run(self, prepared: dict[int, Any]) -> Any:
        """One inference, started and waited for; returns the request, whose output tensors hold this call's
        outputs until the next call.

        Started asynchronously on purpose: the synchronous `infer()` ran mobilenet_v3_small 3.8x slower than
        `start_async()` + `wait()` on a 2-core EPYC shared with other work (8.6 ms against 2.3 ms, medians of
        interleaved rounds). benchmarks/measure_vs_benchmark_app.py compares this path with benchmark_app's
        `-api async -nireq 1` (under `-hint latency` benchmark_app defaults to the synchronous API).
        """
        for index, tensor in prepared.items():
            self._request.set_input_tensor(index, tensor)
        self._request.start_async()
        self._request.wait()
        return self._request

    def parallel_runs(self) -> "AsyncQueueRuns | str":
        """OpenVINO's own concurrent serving: the THROUGHPUT hint's streams fed by an AsyncInferQueue.

        Same precision and threads as this candidate; a THROUGHPUT candidate reuses its own compiled
        model. The queue holds OPTIMAL_NUMBER_OF_INFER_REQUESTS requests, read back from the runtime.
        """
        compiled = self._compiled
        if self.requested["PERFORMANCE_HINT"] != "THROUGHPUT":
            compiled = self._core.compile_model(self._model, "CPU",
                                                {**self.requested, "PERFORMANCE_HINT": "THROUGHPUT"})
        requests = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        streams = _property_text(compiled.get_property("NUM_STREAMS"))
        if requests < 2:
            return f"OpenVINO's THROUGHPUT hint chose {streams} stream and {requests} request on this CPU"
        return AsyncQueueRuns(self._ov.AsyncInferQueue(compiled, requests), requests,
                              f"OpenVINO THROUGHPUT hint: {streams} streams, {requests} requests in flight "
                              "(AsyncInferQueue)")

    def to_numpy(self, output: Any) -> np.ndarray:
        """The first output, copied out of the request's buffer, as float32."""
        return np.array(output.get_output_tensor(0).data, dtype=np.float32, copy=True)

    def info(self) -> dict:
        """The properties the compiled model reports, not just the ones asked for."""
        shapes = ", ".join(f"{name} {port.get_partial_shape()} {port.get_element_type().get_type_name()}"
                           for name, port in zip(self._names, self._compiled.inputs))
        data: dict[str, Any] = {"runtime": f"openvino {self._ov.get_version()}", "device": "CPU",
                                "static_shape": self._static, "inputs": shapes}
        for key in _READ_BACK:
            data[key] = _property_text(self._compiled.get_property(key))
        asked = self.requested["INFERENCE_PRECISION_HINT"]
        if data["INFERENCE_PRECISION_HINT"] != asked:
            data["note"] = (f"asked for {asked} but OpenVINO computes in "
                            f"{data['INFERENCE_PRECISION_HINT']} on this CPU")
        return data


class AsyncQueueRuns:
    """Keeps an AsyncInferQueue's requests busy on one input (the parallel runs of planner.measure.streams)."""

    def __init__(self, queue: Any, streams: int, basis: str) -> None:
        self._queue = queue
        self.streams = streams
        self.basis = basis
        self._durations: list[float] = []
        # Each finished request reports its own inference time (ms), not its wait for a free request.
        queue.set_callback(lambda request, _: self._durations.append(request.latency / 1e3))

    def run_for(self, prepared: dict[int, Any], seconds: float) -> list[float]:
        """Start requests until the deadline (start_async waits for a free one), wait for all; their seconds."""
        self._durations = []
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            self._queue.start_async(prepared, share_inputs=True)
        self._queue.wait_all()
        return self._durations


def _np_dtype(element_type: Any) -> Any:
    """The numpy dtype of an OpenVINO element type; None (keep the array's own) where it is dynamic."""
    return None if element_type.is_dynamic() else element_type.to_dtype()


def _property_text(value: Any) -> Any:
    """A JSON-ready form of a property value: 'f32' for a Type, 'LATENCY' for a hint, ints as ints."""
    if hasattr(value, "get_type_name"):
        return value.get_type_name()
    if isinstance(value, (bool, int, float, str)):
        return value
    text = str(value)
    try:
        return int(text)
    except ValueError:
        return text.split(".")[-1]
