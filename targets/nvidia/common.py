"""Helpers shared by the NVIDIA plugins: what the GPU can do, its name, and waiting for it.

Whether a CUDA device is usable at all is a declared need (`Plugin.needs_cuda`), checked by the
plugin base class.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

CUDA_DEVICE = "cuda"
# bf16 tensor-core math arrived with Ampere; older GPUs emulate it slowly or not at all.
BF16_MIN_CAPABILITY = (8, 0)


def compute_capability(hw: "HardwareProfile") -> tuple[int, int] | None:
    """The first GPU's compute capability: from the profile, else from torch when CUDA is up."""
    for gpu in hw.gpus:
        if gpu.compute_capability:
            major, minor = gpu.compute_capability
            return int(major), int(minor)
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(0)
    return int(major), int(minor)


def supports_bf16(hw: "HardwareProfile") -> bool:
    """Whether the GPU has bf16 tensor cores (compute capability 8.0 or newer)."""
    cc = compute_capability(hw)
    return cc is not None and cc >= BF16_MIN_CAPABILITY


def gpu_name(hw: "HardwareProfile") -> str:
    """The first GPU's name for labels and cache keys; torch's view wins when CUDA is up."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    return hw.gpus[0].name if hw.gpus else "unknown GPU"


def cuda_sync() -> None:
    """Wait for every queued kernel on the current device, so a clock read means the work is done."""
    import torch

    torch.cuda.synchronize()
