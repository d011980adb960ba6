"""TensorRT engines from the shared ONNX export: FP32, FP16 (strongly typed) and INT8 (Q/DQ).

TensorRT 11 removed the FP16/INT8 builder flags: every network is strongly typed, so precision
lives in the ONNX graph. FP16 engines are built from an fp16 copy of the export, INT8 engines
from the symmetric Q/DQ file the shared ONNX quantizer writes. Engines are cached under the plan's
workdir, keyed by GPU name, TensorRT version, ONNX sha256 and batch profile.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from planner.errors import PlannerError
from planner.io import write_atomic
from planner.onnx.feeds import match_inputs, ordered_arrays
from planner.onnx.fp16 import fp16_onnx
from planner.plugins import (
    ActionId,
    CandidateSpec,
    Description,
    ModelRef,
    Phase,
    PlanContext,
    Plugin,
    Precision,
    Target,
    missing_package_reason,
)
from planner.plugins.packaging import PackageFiles, PackagingError, copy_into, runner_text
from targets import wording
from targets.nvidia.common import CUDA_DEVICE, cuda_sync, gpu_name

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.spec import ModelInputs

INSTALL_HINT = missing_package_reason("tensorrt")
RUNNER = Path(__file__).parent / "runners" / "run_tensorrt.py"
MAX_BATCH = 32
# Tactics that want more scratch than this are rarely the fastest; a quarter of the GPU leaves
# room for the engine itself and for whatever else shares the device.
WORKSPACE_CAP_BYTES = 4 << 30
WORKSPACE_FRACTION = 4
# TensorRT DataType member names -> torch dtype attribute names (buffers are torch tensors).
TRT_TO_TORCH_DTYPE = {"FLOAT": "float32", "HALF": "float16", "BF16": "bfloat16", "INT8": "int8",
                      "UINT8": "uint8", "INT32": "int32", "INT64": "int64", "BOOL": "bool"}
_VARIANT_NOTES = {
    "fp32": ("fp32 network; TensorRT may still pick TF32 tensor-core kernels on Ampere and newer",),
    "fp16": ("strongly typed fp16: built from an fp16 copy of the ONNX (ONNX Runtime's float16 "
             "converter); inputs and outputs stay fp32, cast inside the engine",),
    "int8": ("explicit INT8: symmetric Q/DQ nodes from the shared ONNX quantizer; layers without "
             "Q/DQ run in fp32",),
}
_PRECISIONS = {"fp32": Precision.FP32, "fp16": Precision.FP16, "int8": Precision.INT8}


class EngineBuildError(PlannerError):
    """TensorRT could not parse the ONNX file or build an engine from it."""


class TensorRTPlugin(Plugin):
    """TensorRT engines with a dynamic-batch profile, run from torch CUDA buffers."""

    name = "nvidia.tensorrt"
    title = "TensorRT"
    build_cost_s = 60.0  # an engine build per precision and shape
    build_precision = "fp16"
    target = Target.NVIDIA
    actions = (ActionId.GPU_ENGINE,)
    runtime = "tensorrt"
    phase = Phase.EXTRA_IMPACT
    summary = "TensorRT engines (FP32, FP16 strongly typed, INT8 Q/DQ) from the ONNX export"
    # onnx is needed even for an ONNX model: the FP16 and INT8 variants rewrite the graph.
    requires = ("tensorrt", "onnx", "torch")
    needs_onnx = True
    needs_cuda = True


    def prediction_family(self, spec: CandidateSpec) -> str:
        """The TensorRT family (fused layers, kernels picked for this GPU), unless the precision decides."""
        family = super().prediction_family(spec)
        return "tensorrt" if family == "runtime" else family

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Build (or reuse) the FP32, FP16 and, outside quick runs, INT8 engines."""
        import tensorrt as trt

        from planner.onnx.export import shared_onnx

        export = shared_onnx(ctx)
        out_dir = Path(ctx.workdir) / "tensorrt"
        out_dir.mkdir(parents=True, exist_ok=True)
        inputs = ctx.model.inputs
        profile = batch_profile(inputs.batch, dynamic=export.dynamic_batch)
        shapes = inputs_key(inputs)
        gpu = gpu_name(ctx.hw)
        workspace = workspace_bytes(ctx.hw)
        stem = export.path.stem
        for variant in ("fp32", "fp16") if ctx.quick else ("fp32", "fp16", "int8"):
            if ctx.cancel():  # each build can take minutes: stop between them when asked
                return
            extra: tuple[str, ...] = ()
            if variant == "fp32":
                onnx_path = export.path
            elif variant == "fp16":
                onnx_path = fp16_onnx(export.path, out_dir / f"{stem}.fp16.onnx")
            else:
                onnx_path, extra = _int8_onnx(ctx, export, out_dir / f"{stem}.int8-qdq.onnx")
            engine = out_dir / engine_file_name(variant, gpu, trt.__version__,
                                                onnx_sha256(onnx_path), profile, shapes=shapes)
            if engine.is_file():
                ctx.log(f"nvidia.tensorrt: reusing cached {variant} engine {engine.name}")
                extra += ("engine reused from the cache (same GPU, TensorRT version and ONNX)",)
            else:
                ctx.log(f"nvidia.tensorrt: building the {variant} engine (can take minutes)")
                build_engine(onnx_path, engine, inputs=inputs, profile=profile,
                             workspace_bytes=workspace)
            yield CandidateSpec(
                plugin=self.name, label=f"TensorRT {variant} (cuda)",
                config={"device": CUDA_DEVICE, "variant": variant, "onnx": str(onnx_path),
                        "profile": {"min": profile[0], "opt": profile[1], "max": profile[2]},
                        "tensorrt": trt.__version__, "gpu": gpu},
                precision=_PRECISIONS[variant], artifacts={"engine": str(engine)},
                dynamic_batch=export.dynamic_batch,
                notes=(*_VARIANT_NOTES[variant], *extra, _profile_note(profile), *_sequence_note(inputs),
                       *export.notes()))

    def describe(self, spec: CandidateSpec, inputs: Any = None) -> Description:
        """'TensorRT FP16 engine', and the TensorRT calls that load it (the engine file is its package's)."""
        variant = str(spec.config.get("variant", spec.precision))
        engine = wording.file_name(spec.artifacts.get("engine"), f"model.{variant}.engine")
        code = "\n".join([
            "import tensorrt as trt", "",
            f"# {engine} runs only on the GPU model and TensorRT version that built it; its package holds it",
            "runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))",
            f'with open("{engine}", "rb") as f:',
            "    engine = runtime.deserialize_cuda_engine(f.read())",
            "context = engine.create_execution_context()"])
        return Description(f"TensorRT {wording.precision(variant)} engine", code)

    def open(self, spec: CandidateSpec, model: ModelRef) -> "TensorRTSession":
        """Deserialize the engine and bind torch CUDA buffers."""
        return TensorRTSession(spec.artifacts["engine"], precision=str(spec.precision))

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> PackageFiles:
        """The engine and a TensorRT run.py (torch CUDA buffers, as measured); it runs on the same GPU model
        and TensorRT version only."""
        engine = Path(spec.artifacts["engine"])
        if not engine.is_file():
            raise PackagingError(f"the candidate's engine {engine} is gone", "plan again to build it")
        names = copy_into([engine], dest)
        settings = {"model": names[0], "gpu": spec.config.get("gpu"), "tensorrt": spec.config.get("tensorrt"),
                    "profile": spec.config.get("profile")}
        note = (f"a TensorRT engine runs only on the GPU model ({settings['gpu']}) and TensorRT version "
                f"({settings['tensorrt']}) that built it; elsewhere, plan again there to rebuild it")
        return PackageFiles(files=names, run_py=runner_text(RUNNER, settings), runtime="tensorrt",
                            requirements=("tensorrt", "torch", "numpy"), imports=("tensorrt", "torch", "numpy"),
                            settings=settings, notes=(note,))


def batch_profile(batch: int, *, dynamic: bool) -> tuple[int, int, int]:
    """The optimization profile's (min, opt, max) batch: 1..max(32, batch) tuned at `batch`."""
    if not dynamic:
        return batch, batch, batch
    return 1, batch, max(MAX_BATCH, batch)


def workspace_bytes(hw: HardwareProfile) -> int:
    """The builder's scratch-memory limit: a quarter of the GPU's memory, at most 4 GiB."""
    total = hw.gpus[0].memory_total_bytes if hw.gpus else None
    if not total:
        return WORKSPACE_CAP_BYTES
    return min(WORKSPACE_CAP_BYTES, int(total) // WORKSPACE_FRACTION)


def onnx_sha256(path: str | Path) -> str:
    """The sha256 of an ONNX file and its `.data` side file when it has one."""
    path = Path(path)
    digest = hashlib.sha256()
    for part in (path, path.with_name(path.name + ".data")):
        if part.is_file():
            with part.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def engine_file_name(variant: str, gpu: str, trt_version: str, onnx_sha: str,
                     profile: Sequence[int], *, shapes: str = "") -> str:
    """The cache file name: an engine only runs on the GPU model and TensorRT version it was built by.

    `shapes` (from `inputs_key`) tells apart engines of one ONNX file built for other input
    shapes: the profile fixes every dynamic axis but the batch (a sequence length) at the model's.
    """
    safe_gpu = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-").lower() or "gpu"
    batches = "-".join(str(b) for b in profile)
    suffix = f"-s{shapes}" if shapes else ""
    return f"{variant}-{safe_gpu}-trt{trt_version}-{onnx_sha[:16]}-b{batches}{suffix}.engine"


def inputs_key(inputs: ModelInputs) -> str:
    """A short digest of every input's name, dtype and non-batch dimensions (the batch is the profile's)."""
    parts = []
    for t in inputs.tensors:
        dims = t.shape[1:] if t.dynamic_batch else t.shape
        parts.append(f"{t.name}:{t.dtype}:{'x'.join(map(str, dims))}")
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:8]


def profile_shapes(dims: Sequence[int], model_shape: Sequence[int], profile: Sequence[int], *,
                   batch_axis: bool = True) -> tuple[tuple[int, ...], ...]:
    """(min, opt, max) shapes for one network input: -1 batch -> profile, other -1 -> model shape.

    `batch_axis` False (the input has no batch axis) takes dimension 0 from the model too.
    """
    if len(dims) != len(model_shape):
        raise EngineBuildError(f"the network input has {len(dims)} dimensions but the model's "
                               f"input shape {tuple(model_shape)} has {len(model_shape)}")
    shapes = []
    for batch in profile:
        shape = [batch if i == 0 and d < 0 and batch_axis else (model_shape[i] if d < 0 else d)
                 for i, d in enumerate(dims)]
        shapes.append(tuple(int(v) for v in shape))
    return tuple(shapes)


def input_profiles(network_inputs: Sequence[tuple[str, Sequence[int]]], inputs: ModelInputs,
                   profile: Sequence[int]) -> dict[str, tuple[tuple[int, ...], ...]]:
    """(min, opt, max) shapes for every network input (name, dims with -1 dynamic), keyed by name.

    Only the batch axis spans the profile. Any other dynamic axis, a text model's sequence length
    included, is pinned at the model's own size (min = opt = max): one engine per length, which is
    what the planner measures; serving several lengths would need a wider range here.
    """
    try:
        specs = match_inputs([name for name, _ in network_inputs], inputs)
    except ValueError as exc:
        raise EngineBuildError(str(exc), "pass the inputs the ONNX graph takes with --input") from exc
    out = {}
    for name, dims in network_inputs:
        spec = specs[name]
        try:
            out[name] = profile_shapes(tuple(dims), spec.shape, profile, batch_axis=spec.dynamic_batch)
        except EngineBuildError as exc:
            raise EngineBuildError(f"input {name!r}: {exc.problem}", f"the model's inputs are "
                                   f"{inputs.describe()}; pass the graph's with --input") from exc
    return out


def _int8_onnx(ctx: PlanContext, export: Any, dst: Path) -> tuple[Path, tuple[str, ...]]:
    """The symmetric Q/DQ file for TensorRT, from the shared ONNX quantizer, and its notes (calibration, conversion).

    A file older than opset 13 is converted first: per-channel Q/DQ needs it, in TensorRT as in ONNX Runtime.
    """
    from planner.onnx.attention import has_attention
    from planner.onnx.opset import qdq_ready
    from planner.onnx.quantize import calibration_inputs, preprocess, qdq_recipe_notes, quantize_qdq

    ready = qdq_ready(ctx, export)
    source, _ = preprocess(ready.path, dst.with_name(dst.stem + ".pre.onnx"))
    feeds, note = calibration_inputs(ctx)
    attention = has_attention(source)
    quantize_qdq(source, dst, feeds, for_tensorrt=True, attention=attention)
    return dst, (note, *qdq_recipe_notes(attention), *ready.notes)


def _sequence_note(inputs: ModelInputs) -> tuple[str, ...]:
    if inputs.sequence is None:
        return ()
    return (f"sequence length fixed at {inputs.sequence} in the engine's profile (only the batch "
            "varies): another length needs another engine",)


def _profile_note(profile: Sequence[int]) -> str:
    low, opt, high = profile
    if low == high:
        return f"static batch {low}: the exported graph has a fixed batch size"
    return f"dynamic batch profile {low}..{high}, tuned for batch {opt}"


_LOGGER: Any = None


def _logger(trt: Any) -> Any:
    """One recording logger per process: TensorRT keeps the first logger it is given for good."""
    global _LOGGER
    if _LOGGER is None:
        class RecordingLogger(trt.ILogger):
            """Keeps error messages so a failed build can say why."""

            def __init__(self) -> None:
                trt.ILogger.__init__(self)
                self.errors: list[str] = []

            def log(self, severity: Any, msg: str) -> None:
                """Record errors; drop the rest (the builder is chatty at INFO)."""
                if severity in (trt.ILogger.Severity.INTERNAL_ERROR, trt.ILogger.Severity.ERROR):
                    self.errors.append(msg.strip())

        _LOGGER = RecordingLogger()
    return _LOGGER


def _parser_error_text(error: Any) -> str:
    node = error.node_name()
    where = f"{error.node_operator()} node {node!r}: " if node else ""
    return where + error.desc()


def build_engine(onnx_path: str | Path, engine_path: str | Path, *, inputs: ModelInputs,
                 profile: Sequence[int], workspace_bytes: int) -> Path:
    """Parse the ONNX file and write a serialized engine to `engine_path`; EngineBuildError if not."""
    import tensorrt as trt

    onnx_path, engine_path = Path(onnx_path), Path(engine_path)
    logger = _logger(trt)
    logger.errors.clear()
    builder = trt.Builder(logger)
    # Ignored by TensorRT 11 (always strongly typed); opts TensorRT 10.x into the same behaviour.
    strong = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    network = builder.create_network(0 if strong is None else 1 << int(strong))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        errors = [_parser_error_text(parser.get_error(i)) for i in range(parser.num_errors)]
        raise EngineBuildError(f"TensorRT's ONNX parser rejected {onnx_path.name}: "
                               + "; ".join(errors or logger.errors or ["no error was reported"]),
                               "the op named may need a newer TensorRT or a TensorRT plugin")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))
    opt_profile = builder.create_optimization_profile()
    tensors = [network.get_input(i) for i in range(network.num_inputs)]
    network_inputs = [(t.name, tuple(t.shape)) for t in tensors]
    for name, (low, opt, high) in input_profiles(network_inputs, inputs, profile).items():
        opt_profile.set_shape(name, low, opt, high)
    config.add_optimization_profile(opt_profile)
    blob = builder.build_serialized_network(network, config)
    if blob is None:
        raise EngineBuildError(f"TensorRT could not build an engine from {onnx_path.name}: "
                               + "; ".join(logger.errors or ["no error was reported"]))
    # Atomic: a build killed mid-write must not leave a truncated engine in the cache.
    write_atomic(engine_path, lambda fh: fh.write(blob))
    return engine_path


class TensorRTSession:
    """A deserialized engine with torch CUDA buffers; runs on the current torch stream."""

    needs_sync = True

    def __init__(self, engine_path: str | Path, *, precision: str) -> None:
        import tensorrt as trt
        import torch

        self._torch = torch
        self._trt = trt
        self.precision = precision
        self.engine_path = Path(engine_path)
        runtime = trt.Runtime(_logger(trt))
        self._runtime = runtime  # the engine must not outlive its runtime
        self.engine = runtime.deserialize_cuda_engine(self.engine_path.read_bytes())
        if self.engine is None:
            raise EngineBuildError(f"TensorRT could not load {self.engine_path.name}",
                                   "it was built by another TensorRT version or for another GPU; "
                                   "delete it to rebuild")
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self._inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self._outputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        if not self._inputs:
            raise ValueError(f"the engine {self.engine_path.name} has no inputs")
        self._input_dtypes = [self._dtype(n) for n in self._inputs]
        self._bound_shapes: tuple[tuple[int, ...], ...] | None = None
        self._buffers: list[Any] = []

    def _dtype(self, name: str) -> Any:
        kind = self.engine.get_tensor_dtype(name).name
        if kind not in TRT_TO_TORCH_DTYPE:
            raise ValueError(f"tensor {name!r} has TensorRT type {kind}, which has no torch buffer here")
        return getattr(self._torch, TRT_TO_TORCH_DTYPE[kind])

    def prepare(self, feed: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Every input as a contiguous CUDA tensor of its engine type, in the engine's input order."""
        arrays = ordered_arrays(self._inputs, feed)
        torch = self._torch
        return tuple(torch.from_numpy(np.require(a, requirements="C")).to(device=CUDA_DEVICE, dtype=dtype).contiguous()
                     for a, dtype in zip(arrays, self._input_dtypes))

    def _bind(self, shapes: tuple[tuple[int, ...], ...]) -> None:
        """Set every input's shape and (re)allocate output buffers; done once per new set of shapes."""
        for name, shape in zip(self._inputs, shapes):
            if not self.context.set_input_shape(name, shape):
                profile = self.engine.get_tensor_profile_shape(name, 0)
                raise ValueError(f"input {name!r} shape {shape} is outside the engine's optimization "
                                 f"profile (min {tuple(profile[0])}, max {tuple(profile[2])})")
        self._buffers = []
        for name in self._outputs:
            dims = tuple(self.context.get_tensor_shape(name))
            if any(d < 0 for d in dims):
                raise ValueError(f"output {name!r} has a data-dependent shape {dims}; this session "
                                 "preallocates outputs and cannot run it")
            buffer = self._torch.empty(dims, dtype=self._dtype(name), device=CUDA_DEVICE)
            self.context.set_tensor_address(name, buffer.data_ptr())
            self._buffers.append(buffer)
        self._bound_shapes = shapes

    def run(self, prepared: tuple[Any, ...]) -> Any:
        """Enqueue one inference on the current torch stream; the returned buffer is reused."""
        shapes = tuple(tuple(t.shape) for t in prepared)
        if shapes != self._bound_shapes:
            self._bind(shapes)
        for name, tensor in zip(self._inputs, prepared):
            self.context.set_tensor_address(name, tensor.data_ptr())
        stream = self._torch.cuda.current_stream().cuda_stream
        if not self.context.execute_async_v3(stream):
            errors = "; ".join(_logger(self._trt).errors) or "no error was reported"
            raise RuntimeError(f"TensorRT execute_async_v3 failed: {errors}")
        return self._buffers[0]

    def sync(self) -> None:
        """Wait for the enqueued engine work."""
        cuda_sync()

    def to_numpy(self, output: Any) -> np.ndarray:
        """The first output as float32 numpy."""
        return output.detach().float().cpu().numpy()

    def info(self) -> dict:
        """The runtime, device, engine and precision in force."""
        torch = self._torch
        return {"runtime": f"TensorRT {self._trt.__version__}",
                "device": torch.cuda.get_device_name(torch.cuda.current_device()),
                "precision": self.precision, "engine": self.engine_path.name,
                "engine_bytes": self.engine_path.stat().st_size,
                "inputs": ", ".join(f"{n} {str(d).replace('torch.', '')}"
                                    for n, d in zip(self._inputs, self._input_dtypes))}
