"""CPU plugins (torch, ONNX Runtime, OpenVINO) and the hardware facts they share."""

from __future__ import annotations

import importlib.util
from typing import Any

# x86 ISA extensions with native bf16 arithmetic; without them bf16 is emulated and slower than fp32.
BF16_FEATURES = ("avx512_bf16", "amx_bf16")


def compute_threads(hw: Any) -> int:
    """Intra-op threads for one inference: the usable cores, capped at the physical core count.

    SMT siblings share the vector units that dense kernels saturate, so threads beyond the
    physical cores rarely help; a cgroup or affinity limit (usable_cores) caps it further.
    """
    usable = max(1, int(hw.cpu.usable_cores))
    physical = hw.cpu.physical_cores or usable
    return max(1, min(usable, int(physical)))


def native_bf16(hw: Any) -> bool:
    """Whether the CPU computes bf16 natively (AVX512-BF16 or AMX-BF16)."""
    return any(hw.cpu.has(f) for f in BF16_FEATURES)


def onnx_source_reasons(model: Any) -> list[str]:
    """Why this model cannot become an ONNX file here (for the ONNX-based plugins' checks)."""
    if model.onnx_path is not None:
        return []
    if not model.has_torch:
        return ["the model has neither a PyTorch module nor an ONNX file to run"]
    if importlib.util.find_spec("onnx") is None:
        return ["onnx not installed (pip install onnx onnxscript): needed to export the model"]
    return []
