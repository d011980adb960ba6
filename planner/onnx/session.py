"""The ONNX Runtime CPU session every ONNX-based candidate runs in (ORT plugin, INT8, baseline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:
    from planner.measure.streams import ThreadedRuns


class OrtSession:
    """An ONNX Runtime CPU session with the candidate's options, satisfying the Session protocol."""

    def __init__(self, path: str, config: dict) -> None:
        import onnxruntime as ort

        self._ort = ort
        self._path, self._config = str(path), dict(config)
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
        for name, size in (config.get("free_dimensions") or {}).items():
            opts.add_free_dimension_override_by_name(name, int(size))
        self._finish(ort, path, opts)

    def _finish(self, ort, path: str, opts) -> None:
        self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self._input_types = {i.name: _NP_TYPES.get(i.type) for i in self._session.get_inputs()}

    def prepare(self, feed: Mapping[str, np.ndarray]) -> dict:
        """The feed dict for `run`, each input in the dtype the graph declares."""
        from planner.onnx.feeds import ordered_arrays

        names = list(self._input_types)
        return {name: _cast(a, self._input_types[name]) for name, a in zip(names, ordered_arrays(names, feed))}

    def run(self, prepared: dict) -> list:
        """One inference; returns every output."""
        return self._session.run(None, prepared)

    def parallel_runs(self) -> "ThreadedRuns | str":
        """Several sessions over the same file, the threads split between them, one request each.

        This is how ONNX Runtime serves concurrent requests at a higher rate: one session's
        intra-op threads wait on each other at every op, while separate sessions never do.
        """
        from planner.hardware.memory_limits import usable_cores
        from planner.measure.streams import ThreadedRuns, split_threads

        threads = self._session.get_session_options().intra_op_num_threads or usable_cores()
        streams, each = split_threads(threads)
        if streams < 2:
            return f"{threads} thread: no room for parallel ONNX Runtime sessions"
        config = {k: v for k, v in self._config.items() if k != "defaults"}
        config.update(intra_op_threads=each, inter_op_threads=1, execution_mode="ORT_SEQUENTIAL")
        sessions = [OrtSession(self._path, config) for _ in range(streams)]
        return ThreadedRuns([s.run for s in sessions],
                            f"{streams} ONNX Runtime sessions of {each} thread{'s' if each > 1 else ''} each, "
                            "one request in each at a time")

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
            "inputs": ", ".join(self._input_types),
            # Read back from the session: the shapes it was built for, once a free dimension was fixed.
            **({"fixed_shapes": "; ".join(f"{i.name} {list(i.shape)}" for i in self._session.get_inputs())}
               if self._config.get("free_dimensions") else {}),
        }


def _cast(array: np.ndarray, dtype) -> np.ndarray:
    if dtype is not None and array.dtype != dtype:
        array = array.astype(dtype)
    return np.require(array, requirements="C")  # unlike ascontiguousarray, keeps a scalar 0-d


def _config_entry(opts, key: str) -> str:
    # ORT raises for a key that was never set: then the session runs ORT's own default.
    try:
        return opts.get_session_config_entry(key)
    except RuntimeError:
        return "default"


_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
             "tensor(int8)": np.int8, "tensor(bool)": np.bool_}
