"""Run the packaged ONNX model with ONNX Runtime's CPU provider, with the session options the planner measured.

The run.py of a hand-over package the planner wrote, from its template planner/onnx/runners/run_ort.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports only onnxruntime and numpy.
SETTINGS: "model" (the file, beside run.py), and either "defaults" (ONNX Runtime exactly as it comes)
or the graph optimization level, execution mode, intra- and inter-op thread counts, whether idle
threads spin and, for a session built for one input shape, the size each free dimension is fixed at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnxruntime as ort

SETTINGS: dict = {}  # filled in when packaged
THREADS = ("intra_op_threads",)  # where SETTINGS keeps the thread count `--threads` overrides

HERE = Path(__file__).resolve().parent

_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
             "tensor(int8)": np.int8, "tensor(bool)": np.bool_}


def load(folder: str | Path | None = None) -> Any:
    """An InferenceSession over the packaged model with exactly the measured session options."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    # Thread counts apply even to ONNX Runtime's defaults, where only `--threads` sets one.
    if SETTINGS.get("intra_op_threads"):
        opts.intra_op_num_threads = int(SETTINGS["intra_op_threads"])
    if SETTINGS.get("inter_op_threads"):
        opts.inter_op_num_threads = int(SETTINGS["inter_op_threads"])
    if not SETTINGS.get("defaults"):
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, SETTINGS["graph_optimization_level"])
        opts.execution_mode = getattr(ort.ExecutionMode, SETTINGS["execution_mode"])
        spinning = "1" if SETTINGS.get("allow_spinning", True) else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        for name, size in SETTINGS.get("free_dimensions", {}).items():
            opts.add_free_dimension_override_by_name(name, int(size))
    path = Path(folder) if folder is not None else HERE
    return ort.InferenceSession(str(path / SETTINGS["model"]), opts, providers=["CPUExecutionProvider"])


def prepare(session: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feed `run` takes: each graph input by name (or, where the names differ, in order), in its dtype."""
    graph = session.get_inputs()
    names = [i.name for i in graph]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    # np.require keeps a scalar input (a sample rate) 0-d, where ascontiguousarray would make it [1].
    return {i.name: np.require(a, dtype=_NP_TYPES.get(i.type), requirements="C") for i, a in zip(graph, arrays)}


def run(session: Any, prepared: dict[str, np.ndarray]) -> list:
    """One inference; every output."""
    return session.run(None, prepared)


def first_output(outputs: list) -> np.ndarray:
    """The first output as float32."""
    return np.asarray(outputs[0], dtype=np.float32)
