"""CPU plugins (torch, ONNX Runtime, OpenVINO) and the hardware facts they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.hardware.profile import BF16_FEATURES

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile


def compute_threads(hw: HardwareProfile) -> int:
    """Intra-op threads for one inference: the usable cores, capped at the physical core count.

    SMT siblings share the vector units that dense kernels saturate, so threads beyond the
    physical cores rarely help; a cgroup or affinity limit (usable_cores) caps it further.
    """
    usable = max(1, int(hw.cpu.usable_cores))
    physical = hw.cpu.physical_cores or usable
    return max(1, min(usable, int(physical)))


def native_bf16(hw: HardwareProfile) -> bool:
    """Whether the CPU computes bf16 natively (AVX512-BF16 or AMX-BF16)."""
    return any(hw.cpu.has(f) for f in BF16_FEATURES)
