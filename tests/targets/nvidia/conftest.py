"""Fixtures for the NVIDIA plugin tests: real hardware profiles from the fixture trees (models: `tiny`, `text`)."""

from __future__ import annotations

from typing import Callable

import pytest
from hardware_profiles import gpu_server, nvml_gpu, two_core_x86

from planner.hardware import HardwareProfile


@pytest.fixture
def hw_without_gpu() -> HardwareProfile:
    """A CPU server with no NVIDIA driver or GPU: the 2-core x86 container fixture tree."""
    return two_core_x86()


@pytest.fixture
def hw_with_gpu() -> Callable[..., HardwareProfile]:
    """A factory for an x86 server whose one NVIDIA GPU (presented by the fake NVML) has this compute capability."""

    def make(cc: tuple[int, int] | None = (8, 0), name: str = "NVIDIA A100-SXM4-40GB",
             memory: int = 40 << 30) -> HardwareProfile:
        return gpu_server(nvml_gpu(name=name, memory=memory, cc=cc), tree="epyc_container_cgroup_v2")

    return make
