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

SETTINGS = {'inputs': ['x'],
 'model': 'inefficient.nncf-int8.xml',
 'properties': {'INFERENCE_NUM_THREADS': 2,
                'INFERENCE_PRECISION_HINT': 'f32',
                'PERFORMANCE_HINT': 'LATENCY'},
 'shapes': [[-1, 3, 224, 224]]}

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


def prepare(session: Compiled, inputs: Mapping[str, np.ndarray]) -> dict[int, np.ndarray]:
    """Every input by index (by name where all are given, else in order), C-contiguous in its element type."""
    names = SETTINGS["inputs"]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    return {i: np.require(a, dtype=dtype, requirements="C") for i, (a, dtype) in enumerate(zip(arrays, session.dtypes))}


def run(session: Compiled, prepared: dict[int, np.ndarray]) -> Any:
    """One synchronous inference; the outputs are views of the request's own buffers until the next call."""
    return session.request.infer(prepared, share_inputs=True, share_outputs=True)


def first_output(outputs: Any) -> np.ndarray:
    """The first output, copied out of the request's buffer, as float32."""
    return np.array(outputs[0], dtype=np.float32, copy=True)


# --- Added by the planner to every package: its sample inputs, and what `python run.py` does. ---

def sample_inputs(folder=None):
    """The package's sample inputs (samples.npz beside run.py): one dict of arrays by input name per call."""
    import numpy
    from pathlib import Path as _Path

    path = (_Path(folder) if folder is not None else _Path(__file__).resolve().parent) / "samples.npz"
    samples = {}
    with numpy.load(path, allow_pickle=False) as data:
        for key in data.files:
            kind, index, *name = key.split("/", 2)
            if kind == "input" and name:
                samples.setdefault(int(index), {})[name[0]] = data[key]
    return [samples[i] for i in sorted(samples)]


def predict(session, inputs):
    """The first output for one dict of input arrays (by the model's input names) as a float32 numpy array."""
    return first_output(run(session, prepare(session, inputs)))


if __name__ == "__main__":
    session = load()
    for number, inputs in enumerate(sample_inputs()):
        output = predict(session, inputs)
        print(f"sample {number}: output shape {tuple(output.shape)}")
