"""Run the packaged model with OpenVINO on the CPU, with the properties and input shapes the planner measured.

The run.py of a hand-over package the planner wrote, from its template targets/cpu/runners/run_openvino.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports only openvino and numpy.
SETTINGS: "model" (the ONNX file or IR .xml beside run.py), "inputs" (the model's input names in the
graph's order), "shapes" (the shape each input is compiled at; -1 leaves the batch open) and
"properties" (the CPU plugin's compile properties: PERFORMANCE_HINT, INFERENCE_PRECISION_HINT, which
is the precision of every op not quantized, and INFERENCE_NUM_THREADS).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import openvino as ov

SETTINGS: dict = {}  # filled in when packaged
THREADS = ("properties", "INFERENCE_NUM_THREADS")  # where SETTINGS keeps the thread count `--threads` overrides

HERE = Path(__file__).resolve().parent


class Compiled:
    """The compiled model and the one infer request every call reuses."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self.request = compiled.create_infer_request()
        # None for an input whose element type is dynamic: its array is passed in its own dtype.
        self.dtypes = [None if port.get_element_type().is_dynamic() else port.get_element_type().to_dtype()
                       for port in compiled.inputs]


def load(folder: str | Path | None = None) -> Compiled:
    """Read the model, fix its input shapes as measured and compile it for the CPU with the measured properties."""
    path = Path(folder) if folder is not None else HERE
    core = ov.Core()
    model = core.read_model(str(path / SETTINGS["model"]))
    # Keyed by index: a graph input's own names need not include the one the model calls it.
    model.reshape({i: ov.PartialShape(shape) for i, shape in enumerate(SETTINGS["shapes"])})
    return Compiled(core.compile_model(model, "CPU", SETTINGS["properties"]))


def prepare(session: Compiled, inputs: Mapping[str, np.ndarray]) -> dict[int, Any]:
    """Every input by index (by name where all are given, else in order) as a tensor sharing a C-contiguous array
    in its element type: made once per input, so a call only points the request at it."""
    names = SETTINGS["inputs"]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    return {i: ov.Tensor(np.require(a, dtype=dtype, requirements="C"), shared_memory=True)
            for i, (a, dtype) in enumerate(zip(arrays, session.dtypes))}


def run(session: Compiled, prepared: dict[int, Any]) -> Any:
    """One inference, started and waited for (as benchmark_app does: the synchronous infer() ran several times
    slower on a busy CPU); returns the request, whose outputs hold until the next call."""
    for index, tensor in prepared.items():
        session.request.set_input_tensor(index, tensor)
    session.request.start_async()
    session.request.wait()
    return session.request


def first_output(outputs: Any) -> np.ndarray:
    """The first output, copied out of the request's buffer, as float32."""
    return np.array(outputs.get_output_tensor(0).data, dtype=np.float32, copy=True)
