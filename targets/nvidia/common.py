"""Checks and helpers shared by the NVIDIA plugins: is a CUDA device usable, and what it can do."""

from __future__ import annotations

import importlib.util
from typing import Any

CUDA_DEVICE = "cuda"
NO_TORCH_MODULE = "the model is ONNX only: there is no PyTorch module to run"
# bf16 tensor-core math arrived with Ampere; older GPUs emulate it slowly or not at all.
BF16_MIN_CAPABILITY = (8, 0)


def cuda_reasons(hw: Any) -> list[str]:
    """Why CUDA work cannot run here: torch cannot reach a CUDA device (and NVML listed none)."""
    problem = _torch_cuda_problem()
    reasons: list[str] = []
    # The profile comes from NVML; when torch itself reaches a device, trust torch over a missed probe.
    if not hw.gpus and problem:
        reasons.append("no NVIDIA GPU detected (the hardware profile lists none: NVML found no device)")
    if problem:
        reasons.append(problem)
    return reasons


def _torch_cuda_problem() -> str | None:
    """Why torch cannot run CUDA work, or None when it can."""
    if importlib.util.find_spec("torch") is None:
        return "no CUDA device: torch is not installed (pip install torch)"
    import torch

    if torch.version.cuda is None:
        return (f"no CUDA device: torch {torch.__version__} is a CPU-only build "
                "(torch.version.cuda is None)")
    if not torch.cuda.is_available():
        return "no CUDA device: torch.cuda.is_available() is False"
    return None


def torch_module_reasons(model: Any) -> list[str]:
    """Why a torch-level GPU plugin cannot run this model (an ONNX-only model has no module)."""
    return [] if model.has_torch else [NO_TORCH_MODULE]


def compute_capability(hw: Any) -> tuple[int, int] | None:
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
    return tuple(torch.cuda.get_device_capability(0))


def supports_bf16(hw: Any) -> bool:
    """Whether the GPU has bf16 tensor cores (compute capability 8.0 or newer)."""
    cc = compute_capability(hw)
    return cc is not None and cc >= BF16_MIN_CAPABILITY


def gpu_name(hw: Any) -> str:
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
