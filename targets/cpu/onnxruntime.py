"""ONNX Runtime on the CPU: graph optimization level, thread counts and execution mode."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from planner.onnx.package import ort_package
from planner.onnx.session import OrtSession
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
from targets import wording
from targets.cpu import compute_threads

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel
    from planner.models.spec import ModelInputs
    from planner.plugins.packaging import PackageFiles

QUICK_LIMIT = 3
"""A quick plan's ONNX Runtime settings: the plain one, its static shape where the batch is free, the defaults (one
thread, where no static variant takes its place): every quick plan screens them, so each one more is seconds more."""
LEVELS = ("ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL")
MODES = ("ORT_SEQUENTIAL", "ORT_PARALLEL")
_LEVEL_LABEL = {"ORT_ENABLE_BASIC": "basic", "ORT_ENABLE_EXTENDED": "extended", "ORT_ENABLE_ALL": "all"}
_LEVEL_WORDS = {"ORT_ENABLE_BASIC": "basic graph optimizations", "ORT_ENABLE_EXTENDED": "extended graph optimizations",
                "ORT_ENABLE_ALL": "all graph optimizations"}


class OnnxRuntimePlugin(Plugin):
    """The model exported to ONNX (or used as given) and run by ONNX Runtime's CPU provider."""

    name = "cpu.onnxruntime"
    title = "ONNX Runtime"
    target = Target.CPU
    actions = (ActionId.GRAPH_RUNTIME,)
    runtime = "onnxruntime"
    fuses_graph = True
    summary = "ONNX Runtime CPU provider: optimization level, intra/inter-op threads, execution mode"
    requires = ("onnxruntime",)
    needs_onnx = True  # export failures surface from candidates(), with the exporter's reason

    def baseline_spec(self, model: "LoadedModel", hw: "HardwareProfile") -> CandidateSpec | None:
        """An ONNX-only model's baseline: ONNX Runtime's defaults on the model's own file."""
        if model.has_torch or model.onnx_path is None:
            return None
        return CandidateSpec(plugin=self.name, label="onnxruntime defaults (ONNX model)",
                             config={"defaults": True}, artifacts={"onnx": str(model.onnx_path)},
                             dynamic_batch=model.inputs.dynamic_batch)

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Export once (shared), then the optimization-level / thread / execution-mode grid."""
        from planner.onnx.export import shared_onnx

        export = shared_onnx(ctx)
        n = compute_threads(ctx.hw)
        best = _config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", n, 1)
        inter = 2 if n >= 2 else 1
        parallel = _config("ORT_ENABLE_ALL", "ORT_PARALLEL", max(1, n // inter), inter)
        basic = _config("ORT_ENABLE_BASIC", "ORT_SEQUENTIAL", n, 1)
        # ORT as it comes is always a candidate, so the plan never loses to the default session
        # (measured here: on small models its own thread pool beat an explicit 2-thread one).
        defaults = {"defaults": True}
        if ctx.quick:
            # One thread: no hand-offs between threads, which dominate a model of tens of microseconds.
            single = _config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", 1, 1) if n > 1 else basic
            configs = [best, defaults, single]
        else:
            fewer = sorted({t for t in (n // 2, 1) if 1 <= t < n}, reverse=True)
            configs = [best, defaults,
                       *(_config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", t, 1) for t in fewer),
                       _config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", n, 1, spinning=False),
                       parallel,
                       _config("ORT_ENABLE_EXTENDED", "ORT_SEQUENTIAL", n, 1), basic]
        configs = list({_label(c): c for c in configs}.values())  # n == 1 collapses some
        if export.dynamic_batch:
            # The plain configuration with every free dimension fixed to the measured shape, so ONNX Runtime plans
            # its memory and kernels for one shape (as OpenVINO's static compile does): on a sub-millisecond model
            # per-call shape work is a visible share of the call. Only where the batch is free: else it already is.
            fixed = fixed_dimensions(export.path, ctx.model.inputs)
            if fixed:
                configs.insert(1, {**best, "free_dimensions": fixed})
        if ctx.quick:
            configs = configs[:QUICK_LIMIT]
        for config in configs:
            notes = export.notes()
            if config.get("defaults"):
                notes += ("ONNX Runtime's defaults: it chooses the thread pool and every option",)
            elif config["execution_mode"] == "ORT_PARALLEL":
                notes += ("parallel mode runs independent graph branches at once; it only helps "
                          "graphs that have them",)
            if config.get("free_dimensions"):
                dims = ", ".join(f"{name} = {size}" for name, size in config["free_dimensions"].items())
                notes += (f"input shape fixed when the session is built ({dims}): ONNX Runtime plans for that one "
                          "shape, and only it runs",)
            if not config.get("allow_spinning", True):
                notes += ("idle threads sleep instead of spinning: slower hand-offs, but no "
                          "CPU burnt while waiting (helps on shared or busy machines)",)
            yield CandidateSpec(plugin=self.name, label=_label(config), config=config,
                                precision=Precision.FP32, artifacts={"onnx": str(export.path)},
                                threads=config.get("intra_op_threads"),
                                interop_threads=config.get("inter_op_threads"),
                                dynamic_batch=export.dynamic_batch and not config.get("free_dimensions"),
                                notes=notes)

    def describe(self, spec: CandidateSpec, inputs: "ModelInputs | None" = None) -> Description:
        """'ONNX Runtime, all graph optimizations, sequential, 2 threads', and its SessionOptions."""
        model_file = wording.file_name(spec.artifacts.get("onnx"), "model.onnx")
        return Description(title(spec.config), wording.ort_session_code(spec.config, model_file))

    def open(self, spec: CandidateSpec, model: ModelRef) -> "OrtSession":
        """Build the InferenceSession with exactly the spec's options."""
        return OrtSession(spec.artifacts["onnx"], spec.config)

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> "PackageFiles":
        """The ONNX file and an ONNX Runtime run.py with exactly the spec's session options."""
        return ort_package(spec.artifacts["onnx"], dest, spec.config)


def _config(level: str, mode: str, intra: int, inter: int, *, spinning: bool = True) -> dict:
    return {"graph_optimization_level": level, "execution_mode": mode,
            "intra_op_threads": intra, "inter_op_threads": inter, "allow_spinning": spinning}


def _label(config: dict) -> str:
    if config.get("defaults"):
        return "onnxruntime defaults"
    mode = "seq" if config["execution_mode"] == "ORT_SEQUENTIAL" else "parallel"
    threads = f"{config['intra_op_threads']}t"
    if config["execution_mode"] == "ORT_PARALLEL":
        threads = f"{config['inter_op_threads']}x{config['intra_op_threads']}t"
    label = f"onnxruntime {_LEVEL_LABEL[config['graph_optimization_level']]} {mode} {threads}"
    label = label if config["allow_spinning"] else label + " no-spin"
    return label + " static shape" if config.get("free_dimensions") else label


def title(config: dict) -> str:
    """A configuration in plain words: 'ONNX Runtime, all graph optimizations, sequential, 2 threads'."""
    if config.get("defaults"):
        return "ONNX Runtime, default settings"
    if config["execution_mode"] == "ORT_PARALLEL":
        each = wording.threads(int(config.get("intra_op_threads") or 1))
        mode = f"parallel branches ({int(config.get('inter_op_threads') or 1)} at once, {each} each)"
    else:
        mode = wording.title("sequential", wording.threads(config.get("intra_op_threads")))
    return wording.title("ONNX Runtime", _LEVEL_WORDS[config["graph_optimization_level"]], mode,
                         "" if config.get("allow_spinning", True) else "idle threads sleep (no spinning)",
                         "static input shape" if config.get("free_dimensions") else "")


def fixed_dimensions(path: str | Path, inputs: "ModelInputs") -> dict[str, int]:
    """{symbolic dimension name: size} for every free dimension of the graph's inputs, at the model's measured shape.

    ONNX Runtime takes these as free-dimension overrides (SessionOptions.add_free_dimension_override_by_name). A name
    that two inputs would fix to different sizes is left free; {} when the graph has no free dimension.
    """
    import onnx

    from planner.onnx.feeds import match_inputs

    graph = onnx.load(str(path), load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    values = [v for v in graph.input if v.name not in initializers]
    specs = match_inputs([v.name for v in values], inputs)
    fixed: dict[str, int] = {}
    clashing: set[str] = set()
    for value in values:
        shape = specs[value.name].shape
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if not dim.dim_param or axis >= len(shape):
                continue
            if fixed.setdefault(dim.dim_param, int(shape[axis])) != int(shape[axis]):
                clashing.add(dim.dim_param)
    return {name: size for name, size in fixed.items() if name not in clashing}


