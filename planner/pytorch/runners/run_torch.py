"""Run the packaged PyTorch program with the settings the planner measured: threads, precision, memory format,
torch.compile and the device.

The run.py of a hand-over package the planner wrote, from its template planner/pytorch/runners/run_torch.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports only torch and numpy.
SETTINGS: "model" (a torch.export archive, .pt2, or TorchScript, .pt, beside run.py), "format" ("export"
or "torchscript"), "device", "dtype" (float32, bfloat16, float16: what the weights and float inputs are
cast to), "channels_last", "compile" (a torch.compile mode, or None), "threads" and "interop_threads"
(None: PyTorch's own choice), "scalars" (input positions a TorchScript forward takes as Python numbers)
and "mark_step" (torch.compile's CUDA graphs need each call marked).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

SETTINGS: dict = {}  # filled in when packaged
THREADS = ("threads",)  # where SETTINGS keeps the thread count `--threads` overrides

HERE = Path(__file__).resolve().parent
_NUMBERS = {"int": int, "float": float, "bool": bool}


class Module:
    """The loaded module with the device, dtype and memory format its inputs are given in."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.device = torch.device(SETTINGS["device"])
        self.dtype = getattr(torch, SETTINGS["dtype"])


def load(folder: str | Path | None = None) -> Module:
    """Set the thread counts, load the program onto its device and apply the measured settings."""
    if SETTINGS.get("threads"):
        torch.set_num_threads(int(SETTINGS["threads"]))
    if SETTINGS.get("interop_threads"):
        try:
            torch.set_num_interop_threads(int(SETTINGS["interop_threads"]))
        except RuntimeError:
            pass  # settable only before the process's first parallel op: call load() first thing
    path = (Path(folder) if folder is not None else HERE) / SETTINGS["model"]
    if SETTINGS["format"] == "torchscript":
        module = torch.jit.load(str(path), map_location=SETTINGS["device"]).eval()
    else:
        module = torch.export.load(str(path)).module()
    if SETTINGS.get("channels_last"):
        module = module.to(memory_format=torch.channels_last)
    if SETTINGS.get("compile"):
        mode = SETTINGS["compile"]
        module = torch.compile(module, mode=None if mode == "default" else mode)
    return Module(module)


def prepare(session: Module, inputs: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
    """The forward's positional arguments: float inputs cast to the dtype, on the device, NHWC where measured so."""
    names = SETTINGS["inputs"]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    scalars = {int(k): v for k, v in SETTINGS.get("scalars", {}).items()}
    args: list[Any] = []
    for i, array in enumerate(arrays):
        if i in scalars:
            args.append(_NUMBERS[scalars[i]](np.asarray(array).item()))
            continue
        x = torch.from_numpy(np.require(array, requirements="C"))  # a scalar stays 0-d
        if x.is_floating_point():
            x = x.to(session.dtype)
        x = x.to(session.device)
        if SETTINGS.get("channels_last") and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        args.append(x)
    return tuple(args)


def run(session: Module, prepared: tuple[Any, ...]) -> Any:
    """One forward pass without autograd (on a GPU it is queued: `sync` waits for it)."""
    if SETTINGS.get("mark_step"):
        torch.compiler.cudagraph_mark_step_begin()
    with torch.inference_mode():
        return session.module(*prepared)


def sync(session: Module) -> None:
    """Wait for the work queued on the device (a no-op on the CPU)."""
    if session.device.type == "cuda":
        torch.cuda.synchronize(session.device)


def first_output(outputs: Any) -> np.ndarray:
    """The first tensor of the output as float32 numpy."""
    while not isinstance(outputs, torch.Tensor):
        outputs = next(iter(outputs.values())) if isinstance(outputs, dict) else outputs[0]
    return outputs.detach().float().cpu().numpy()
