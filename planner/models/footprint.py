"""How much memory a model's inputs and activations will need, estimated before anything is allocated.

An absurd input shape (64x3x4096x4096) should end in a clear error naming the estimate and the
limit, not in a MemoryError halfway through generating inputs or in the kernel's OOM killer.
The estimate has two parts:

* the input tensors: their shapes and dtypes give their size exactly;
* the activations: a shape trace of the forward pass on tensors that carry no data (PyTorch's
  fake tensors: every operator computes its output's shape and dtype, nothing is allocated)
  finds the largest single activation. Peak memory during inference is estimated as the inputs
  plus twice that activation (an operator's input and output are alive together). An ONNX-only
  model, or a module the trace cannot follow, is estimated from its inputs alone, and says so.

Both parts grow in proportion to the batch, so one estimate serves every batch of a sweep.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Any

from planner import units
from planner.errors import InputSpecError
from planner.models.spec import ModelInputs

ACTIVATION_COPIES = 2
"""Activations alive at once at the peak: an operator's input and its output."""

_ITEM_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
               "int8": 1, "uint8": 1, "bool": 1}

TRACED_BASIS = "inputs plus twice the largest activation, from a shape trace that allocates no data"
INPUTS_BASIS = "inputs only: the activations could not be traced"
SMALL_BASIS = "inputs only: far below the memory available, so the activations were not traced at load"

SMALL_INPUT_FACTOR = 2048
"""Inputs this many times smaller than a quarter of the memory are not traced when a model loads: even an
activation a thousand times the input would fit twice. The trace imports PyTorch's fake-tensor machinery
(1-2 s), which a typical model's load should not pay; the baseline's batch sweep traces before it runs."""


@dataclass(frozen=True)
class Footprint:
    """Estimated memory of one forward pass at `batch`: the inputs and the largest activation."""

    batch: int
    input_bytes: int
    activation_bytes: int | None = None  # the largest single activation; None: not traced
    basis: str = INPUTS_BASIS

    @property
    def peak_bytes(self) -> int:
        """The estimated peak: inputs plus the activations alive together at the largest operator."""
        return self.input_bytes + ACTIVATION_COPIES * (self.activation_bytes or 0)

    def at_batch(self, batch: int) -> "Footprint":
        """The same estimate at another batch (inputs and activations scale with the batch)."""
        scale = batch / self.batch if self.batch else 1.0
        activation = None if self.activation_bytes is None else math.ceil(self.activation_bytes * scale)
        return replace(self, batch=batch, input_bytes=math.ceil(self.input_bytes * scale),
                       activation_bytes=activation)

    def largest_batch_within(self, limit_bytes: int) -> int:
        """The largest batch whose estimated peak fits in `limit_bytes` (0 when not even one sample does)."""
        per_sample = self.peak_bytes / self.batch if self.batch else self.peak_bytes
        return int(limit_bytes // per_sample) if per_sample > 0 else self.batch

    def total(self) -> str:
        """The estimated peak in words: 'about 24 GiB at batch 64'."""
        return f"about {units.size(self.peak_bytes)} at batch {self.batch}"

    def describe(self) -> str:
        """The estimate in words: its total and what it is made of."""
        parts = f"inputs {units.size(self.input_bytes)}"
        if self.activation_bytes is not None:
            parts += f", largest activation {units.size(self.activation_bytes)}"
        return f"{self.total()} ({parts}; estimate: {self.basis})"


def tensor_bytes(inputs: ModelInputs) -> int:
    """The bytes one set of these inputs takes, from their shapes and dtypes."""
    return sum(math.prod(t.shape) * _ITEM_BYTES.get(t.dtype, 4) for t in inputs.tensors)


def estimate_footprint(inputs: ModelInputs, module: Any = None) -> Footprint:
    """The memory estimate for these inputs: traced through `module` where it can be, else inputs only."""
    base = Footprint(batch=inputs.batch, input_bytes=tensor_bytes(inputs))
    if module is None:
        return base
    largest = trace_largest_activation(module, inputs)
    if largest is None:
        return base
    return replace(base, activation_bytes=largest, basis=TRACED_BASIS)


def trace_largest_activation(module: Any, inputs: ModelInputs) -> int | None:
    """The largest tensor any operator of `module` produces on these inputs, in bytes, without data.

    Returns None where the trace fails: TorchScript, data-dependent control flow, or an operator
    fake tensors do not support. Whatever the forward pass stored on the module (a lazily built
    cache) is put back as it was, so no fake tensor is left behind for the real run.
    """
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        return None  # scripted code runs outside the Python dispatcher the trace relies on
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves
    except ImportError:
        return None

    class _Largest(TorchDispatchMode):
        """Records the size of every operator's outputs as the fake tensors flow through."""

        def __init__(self) -> None:
            super().__init__()
            self.largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for leaf in tree_leaves(out):
                if isinstance(leaf, torch.Tensor):
                    self.largest = max(self.largest, leaf.numel() * leaf.element_size())
            return out

    saved = _module_state(module)
    recorder = _Largest()
    try:
        with torch.inference_mode(), FakeTensorMode(allow_non_fake_inputs=True):
            args = [_fake_input(torch, t.shape, t.dtype) for t in inputs.tensors]
            with recorder:
                module(*args)
    except Exception:  # noqa: BLE001 - any failure means the trace cannot estimate this module
        return None
    finally:
        _restore_module_state(module, saved)
    return recorder.largest


def _fake_input(torch: Any, shape: tuple[int, ...], dtype: str) -> Any:
    # Inside FakeTensorMode a factory call makes a tensor with a shape and dtype but no storage.
    return torch.empty(shape, dtype=getattr(torch, dtype, torch.float32))


def _module_state(module: Any) -> list[tuple[Any, dict, dict, dict]]:
    """Shallow copies of every submodule's attributes, parameters and buffers."""
    modules = module.modules() if hasattr(module, "modules") else [module]
    return [(m, dict(vars(m)), dict(getattr(m, "_parameters", {})), dict(getattr(m, "_buffers", {})))
            for m in modules]


def _restore_module_state(module: Any, saved: list[tuple[Any, dict, dict, dict]]) -> None:
    for m, attributes, parameters, buffers in saved:
        for store, before in ((vars(m), attributes), (getattr(m, "_parameters", None), parameters),
                              (getattr(m, "_buffers", None), buffers)):
            if store is None:
                continue
            for key in [k for k in store if k not in before]:
                del store[key]
            for key, value in before.items():
                if store.get(key) is not value:
                    store[key] = value


def host_memory_limit() -> tuple[int | None, str]:
    """What this process can allocate now, in bytes, and how that was read (None when unreadable).

    Available memory as the kernel counts it (psutil), capped by a container's memory limit.
    """
    from planner.hardware._files import REAL_ROOT
    from planner.hardware.detect import probe_memory

    memory = probe_memory(REAL_ROOT, [])
    if memory.limit_bytes is not None and (memory.available_bytes is None
                                           or memory.limit_bytes < memory.available_bytes):
        return memory.limit_bytes, "allowed by the container's memory limit"
    return memory.available_bytes, "available on this machine"


def gpu_free_bytes() -> int | None:
    """Free memory on the current CUDA device, where this process already uses CUDA (None otherwise)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None  # opening a CUDA context only to ask would itself take GPU memory
    free, _ = torch.cuda.mem_get_info()
    return int(free)


def check_fits(footprint: Footprint, limit_bytes: int | None, *, where: str, inputs: ModelInputs) -> None:
    """Raise a clear error (exit 2) when the estimated peak is larger than `limit_bytes`.

    `where` says what the limit is ("available on this machine"); the fix names a batch whose
    estimate takes at most half the limit (the runtime, its workspace and the measurement's extra
    input copies need the rest), as the flags that give it.
    """
    if limit_bytes is None or footprint.peak_bytes <= limit_bytes:
        return
    fits = footprint.at_batch(1).largest_batch_within(limit_bytes // 2)
    if fits >= 1 and inputs.dynamic_batch and inputs.batch > 1:
        smaller = inputs.with_batch(min(fits, inputs.batch - 1))
        fix = (f"use batch {smaller.batch} or smaller (e.g. {smaller.example()}: "
               f"{footprint.at_batch(smaller.batch).total()}), or smaller inputs")
    else:
        fix = "use smaller inputs, or run on a machine with more memory"
    raise InputSpecError(
        f"inputs {inputs.describe()} would need {footprint.describe()}, more than the "
        f"{units.size(limit_bytes)} of memory {where}; nothing was allocated",
        f"{fix}; or free memory held by other processes")


SWEEP_FEEDS = 2
"""Input sets a batch sweep holds at once (it alternates between two so no cache sees one input)."""


def sweep_guard(footprint: Footprint, *, budget_bytes: int | None = None, gpu: bool = False) -> dict[str, Any]:
    """The keyword arguments that make `throughput_sweep` stop before a batch estimated not to fit.

    The limit is the tightest of: the memory this process may still allocate, the caller's
    memory budget, and free GPU memory for a session that runs on the GPU.
    """
    host, _ = host_memory_limit()
    limits = [v for v in (host, budget_bytes, gpu_free_bytes() if gpu else None) if v is not None]
    if not limits:
        return {}

    def estimate(batch: int) -> int:
        at = footprint.at_batch(batch)
        return at.peak_bytes + (SWEEP_FEEDS - 1) * at.input_bytes

    return {"estimate_bytes": estimate, "memory_limit_bytes": min(limits),
            "estimate_basis": f"estimate: {footprint.basis}, with {SWEEP_FEEDS} input sets held"}


def guard_inputs(inputs: ModelInputs, module: Any = None) -> Footprint:
    """Estimate the footprint and refuse, before any allocation, inputs that cannot fit in host memory."""
    footprint = estimate_footprint(inputs)
    limit, where = host_memory_limit()
    # The inputs alone are checked first: a shape trace of an absurd shape is cheap, but pointless.
    check_fits(footprint, limit, where=where, inputs=inputs)
    if module is not None:
        if limit is not None and footprint.input_bytes * SMALL_INPUT_FACTOR <= limit // 4:
            return replace(footprint, basis=SMALL_BASIS)
        footprint = estimate_footprint(inputs, module)
        check_fits(footprint, limit, where=where, inputs=inputs)
    return footprint


def sweep_footprint(footprint: Footprint | None, inputs: ModelInputs, module: Any = None) -> Footprint:
    """The estimate a batch sweep needs: traced now if loading skipped the trace for small inputs."""
    if footprint is None or (footprint.basis == SMALL_BASIS and module is not None):
        return estimate_footprint(inputs, module)
    return footprint


__all__ = ["Footprint", "check_fits", "estimate_footprint", "gpu_free_bytes", "guard_inputs",
           "host_memory_limit", "sweep_footprint", "sweep_guard", "tensor_bytes", "trace_largest_activation"]
