"""Hardware detection: what machine the model will run on, and its measured roofline ceilings."""

from planner.hardware.ceilings import Ceilings, measure_ceilings
from planner.hardware.detect import detect
from planner.hardware.profile import (
    CpuInfo,
    DeviceClass,
    GpuInfo,
    HardwareProfile,
    MemoryInfo,
)
from planner.hardware.render import format_profile

__all__ = [
    "Ceilings",
    "CpuInfo",
    "DeviceClass",
    "GpuInfo",
    "HardwareProfile",
    "MemoryInfo",
    "detect",
    "format_profile",
    "measure_ceilings",
]
