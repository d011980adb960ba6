"""Run the packaged TensorRT engine on the GPU it was built for, with torch CUDA tensors as its buffers.

The run.py of a hand-over package the planner wrote, from its template targets/nvidia/runners/run_tensorrt.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports tensorrt, torch (the CUDA buffers and
stream, as the planner measured it) and numpy. An engine runs only on the GPU model and TensorRT version that
built it (SETTINGS "gpu" and "tensorrt"). SETTINGS: "model" (the .engine file beside run.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import tensorrt as trt
import torch

SETTINGS: dict = {}  # filled in when packaged

HERE = Path(__file__).resolve().parent
_TORCH_DTYPES = {"FLOAT": torch.float32, "HALF": torch.float16, "BF16": torch.bfloat16, "INT8": torch.int8,
                 "UINT8": torch.uint8, "INT32": torch.int32, "INT64": torch.int64, "BOOL": torch.bool}


class Engine:
    """A deserialized engine, its execution context and the output buffers bound for the last input shapes."""

    def __init__(self, path: Path) -> None:
        self.runtime = trt.Runtime(trt.Logger(trt.Logger.ERROR))  # the engine must not outlive its runtime
        self.engine = self.runtime.deserialize_cuda_engine(path.read_bytes())
        if self.engine is None:
            raise RuntimeError(f"TensorRT {trt.__version__} could not load {path.name}: it was built with TensorRT "
                               f"{SETTINGS.get('tensorrt')} for {SETTINGS.get('gpu')}; rebuild it for this machine")
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self.outputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        self.bound: tuple | None = None
        self.buffers: list[Any] = []

    def dtype(self, name: str) -> Any:
        """The torch dtype of one of the engine's tensors."""
        return _TORCH_DTYPES[self.engine.get_tensor_dtype(name).name]

    def bind(self, shapes: tuple) -> None:
        """Set the input shapes and allocate the outputs; once per new set of shapes."""
        for name, shape in zip(self.inputs, shapes):
            if not self.context.set_input_shape(name, shape):
                raise ValueError(f"input {name!r} shape {shape} is outside the engine's optimization profile")
        self.buffers = []
        for name in self.outputs:
            buffer = torch.empty(tuple(self.context.get_tensor_shape(name)), dtype=self.dtype(name), device="cuda")
            self.context.set_tensor_address(name, buffer.data_ptr())
            self.buffers.append(buffer)
        self.bound = shapes


def load(folder: str | Path | None = None) -> Engine:
    """Deserialize the engine onto the current CUDA device."""
    return Engine((Path(folder) if folder is not None else HERE) / SETTINGS["model"])


def prepare(session: Engine, inputs: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
    """Every input as a contiguous CUDA tensor of its engine type, in the engine's input order."""
    names = session.inputs
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    return tuple(torch.from_numpy(np.require(a, requirements="C")).to(device="cuda", dtype=session.dtype(n))
                 .contiguous() for n, a in zip(names, arrays))


def run(session: Engine, prepared: tuple[Any, ...]) -> list[Any]:
    """Enqueue one inference on the current torch stream (`sync` waits for it); the output buffers are reused."""
    shapes = tuple(tuple(t.shape) for t in prepared)
    if shapes != session.bound:
        session.bind(shapes)
    for name, tensor in zip(session.inputs, prepared):
        session.context.set_tensor_address(name, tensor.data_ptr())
    if not session.context.execute_async_v3(torch.cuda.current_stream().cuda_stream):
        raise RuntimeError("TensorRT execute_async_v3 failed")
    return session.buffers


def sync(session: Engine) -> None:
    """Wait for the enqueued engine work."""
    torch.cuda.synchronize()


def first_output(outputs: list[Any]) -> np.ndarray:
    """The first output as float32 numpy."""
    return outputs[0].detach().float().cpu().numpy()
