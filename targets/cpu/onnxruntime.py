"""ONNX Runtime on the CPU: graph optimization level, thread counts and execution mode."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from planner.plugins import CandidateSpec, ModelRef, PlanContext, Plugin, Precision, Target
from targets.cpu import compute_threads, onnx_source_reasons

QUICK_LIMIT = 3
LEVELS = ("ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL")
MODES = ("ORT_SEQUENTIAL", "ORT_PARALLEL")
_LEVEL_LABEL = {"ORT_ENABLE_BASIC": "basic", "ORT_ENABLE_EXTENDED": "extended", "ORT_ENABLE_ALL": "all"}


class OnnxRuntimePlugin(Plugin):
    """The model exported to ONNX (or used as given) and run by ONNX Runtime's CPU provider."""

    name = "cpu.onnxruntime"
    target = Target.CPU
    summary = "ONNX Runtime CPU provider: optimization level, intra/inter-op threads, execution mode"
    requires = ("onnxruntime",)

    def check(self, hw: Any, model: Any) -> list[str]:
        """Needs onnxruntime, and onnx to export a torch model; export failures come later."""
        reasons = super().check(hw, model)
        reasons.extend(onnx_source_reasons(model))
        return reasons

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Export once (shared), then the optimization-level / thread / execution-mode grid."""
        from planner.export import shared_onnx

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
            configs = [best, defaults, basic]
        else:
            fewer = sorted({t for t in (n // 2, 1) if 1 <= t < n}, reverse=True)
            configs = [best, defaults,
                       *(_config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", t, 1) for t in fewer),
                       _config("ORT_ENABLE_ALL", "ORT_SEQUENTIAL", n, 1, spinning=False),
                       parallel,
                       _config("ORT_ENABLE_EXTENDED", "ORT_SEQUENTIAL", n, 1), basic]
        configs = list({_label(c): c for c in configs}.values())  # n == 1 collapses some
        if ctx.quick:
            configs = configs[:QUICK_LIMIT]
        for config in configs:
            notes = export.notes()
            if config.get("defaults"):
                notes += ("ONNX Runtime's defaults: it chooses the thread pool and every option",)
            elif config["execution_mode"] == "ORT_PARALLEL":
                notes += ("parallel mode runs independent graph branches at once; it only helps "
                          "graphs that have them",)
            if not config.get("allow_spinning", True):
                notes += ("idle threads sleep instead of spinning: slower hand-offs, but no "
                          "CPU burnt while waiting (helps on shared or busy machines)",)
            yield CandidateSpec(plugin=self.name, label=_label(config), config=config,
                                precision=Precision.FP32, artifacts={"onnx": str(export.path)},
                                threads=config.get("intra_op_threads"),
                                dynamic_batch=export.dynamic_batch, notes=notes)

    def open(self, spec: CandidateSpec, model: ModelRef) -> "OrtSession":
        """Build the InferenceSession with exactly the spec's options."""
        return OrtSession(spec.artifacts["onnx"], spec.config)


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
    return label if config["allow_spinning"] else label + " no-spin"


class OrtSession:
    """An ONNX Runtime CPU session with the candidate's options, satisfying the Session protocol."""

    def __init__(self, path: str, config: dict) -> None:
        import onnxruntime as ort

        self._ort = ort
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        if config.get("defaults"):
            # ONNX Runtime exactly as a user gets it: the peer/baseline for ONNX-only models.
            self._finish(ort, path, opts)
            return
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                                config.get("graph_optimization_level", "ORT_ENABLE_ALL"))
        opts.execution_mode = getattr(ort.ExecutionMode, config.get("execution_mode", "ORT_SEQUENTIAL"))
        if config.get("intra_op_threads"):
            opts.intra_op_num_threads = int(config["intra_op_threads"])
        if config.get("inter_op_threads"):
            opts.inter_op_num_threads = int(config["inter_op_threads"])
        spinning = "1" if config.get("allow_spinning", True) else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        self._finish(ort, path, opts)

    def _finish(self, ort, path: str, opts) -> None:
        self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        first = self._session.get_inputs()[0]
        self._input_name = first.name
        self._input_dtype = _NP_TYPES.get(first.type)

    def prepare(self, array: np.ndarray) -> dict:
        """The feed dict for `run`, in the dtype the graph declares."""
        if self._input_dtype is not None and array.dtype != self._input_dtype:
            array = array.astype(self._input_dtype)
        return {self._input_name: np.ascontiguousarray(array)}

    def run(self, prepared: dict) -> list:
        """One inference; returns every output."""
        return self._session.run(None, prepared)

    def to_numpy(self, output: list) -> np.ndarray:
        """The first output as float32."""
        return np.asarray(output[0], dtype=np.float32)

    def info(self) -> dict:
        """The options the session actually runs with, read back from it."""
        opts = self._session.get_session_options()
        return {
            "runtime": f"onnxruntime {self._ort.__version__}",
            "providers": list(self._session.get_providers()),
            "graph_optimization_level": str(opts.graph_optimization_level).split(".")[-1],
            "execution_mode": str(opts.execution_mode).split(".")[-1],
            "intra_op_threads": opts.intra_op_num_threads,
            "inter_op_threads": opts.inter_op_num_threads,
            "allow_spinning": _config_entry(opts, "session.intra_op.allow_spinning"),
            "input": self._input_name,
        }


def _config_entry(opts, key: str) -> str:
    # ORT raises for a key that was never set: then the session runs ORT's own default.
    try:
        return opts.get_session_config_entry(key)
    except RuntimeError:
        return "default"


_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
             "tensor(int8)": np.int8, "tensor(bool)": np.bool_}
