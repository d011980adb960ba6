"""A Session over a torch module: eager, channels_last, torch.compile, fp16/bf16, CPU or CUDA."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from planner.models.inputs import scalar_arguments, scalar_value

_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class TorchSession:
    """Runs a torch module under inference_mode with the settings a candidate asks for."""

    def __init__(self, module: Any, *, device: str = "cpu", precision: str = "fp32",
                 channels_last: bool = False, compile_mode: str | None = None,
                 threads: int | None = None, interop_threads: int | None = None) -> None:
        import torch

        self._torch = torch
        self.device = torch.device(device)
        self.dtype = getattr(torch, _DTYPES[precision])
        self.precision = precision
        self.channels_last = channels_last
        self.compile_mode = compile_mode
        self.interop_note = ""
        if threads:
            torch.set_num_threads(threads)
        if interop_threads:
            try:
                torch.set_num_interop_threads(interop_threads)
            except RuntimeError as exc:  # only settable before the first parallel op
                self.interop_note = f"inter-op threads not set: {exc}"
        from planner.models.loaded import set_eval

        # Read before torch.compile wraps the module: a TorchScript `int sr` takes a number, not a tensor.
        self._scalars = scalar_arguments(module)
        module = set_eval(module.to(self.device).to(self.dtype))
        if channels_last:
            module = module.to(memory_format=torch.channels_last)
        if compile_mode:
            import logging

            # Inductor's C++ build warns "No CUDA runtime is found" on every CPU-only machine; the
            # candidate's own result says what ran, so the warning would only clutter the plan's output.
            logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
            module = torch.compile(module, mode=None if compile_mode == "default" else compile_mode)
        self.module = module

    def prepare(self, feed: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Move each input to the device, dtype and memory format the module runs in (positional order);
        an argument the forward types as int, float or bool gets a Python number instead."""
        scalars = self._scalars
        return tuple(self._tensor(a) if i not in scalars else scalar_value(a, scalars[i])
                     for i, a in enumerate(feed.values()))

    def _tensor(self, array: np.ndarray) -> Any:
        x = self._torch.from_numpy(np.require(array, requirements="C"))  # a scalar stays 0-d
        if x.is_floating_point():
            x = x.to(self.dtype)
        x = x.to(self.device)
        if self.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=self._torch.channels_last)
        return x

    def run(self, prepared: tuple[Any, ...]) -> Any:
        """One forward pass without autograd."""
        with self._torch.inference_mode():
            return self.module(*prepared)

    def sync(self) -> None:
        """Wait for queued device work, so a clock read means the work is done."""
        if self.device.type == "cuda":
            self._torch.cuda.synchronize(self.device)

    @property
    def needs_sync(self) -> bool:
        """Whether clock reads need `sync` first (asynchronous devices)."""
        return self.device.type == "cuda"

    def to_numpy(self, output: Any) -> np.ndarray:
        """The first tensor of the output as float32 numpy."""
        torch = self._torch
        while not isinstance(output, torch.Tensor):
            if isinstance(output, dict):
                output = next(iter(output.values()))
            else:
                output = output[0]
        return output.detach().float().cpu().numpy()

    def info(self) -> dict:
        """The settings in force."""
        torch = self._torch
        data = {"runtime": f"torch {torch.__version__}", "device": str(self.device),
                "precision": self.precision, "channels_last": self.channels_last,
                "compile": self.compile_mode or "off",
                "intra_op_threads": torch.get_num_threads(),
                "inter_op_threads": torch.get_num_interop_threads(),
                "mkldnn": bool(torch.backends.mkldnn.is_available())}
        if self.interop_note:
            data["note"] = self.interop_note
        return data
