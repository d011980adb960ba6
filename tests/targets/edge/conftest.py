"""Fixtures for the edge plugin tests: real hardware profiles from the fixture trees (demo:tiny is `tiny`)."""

from __future__ import annotations

from typing import Callable

import pytest
from hardware_profiles import fixture_profile, with_cpu

from planner.hardware import DeviceClass, HardwareProfile

# Which fixture tree stands for an (x86?, device class) pair; each tree detects as that class.
_TREES = {
    (True, DeviceClass.CPU_SERVER): "epyc_container_cgroup_v2",  # 2 usable cores, AVX2, no VNNI
    (False, DeviceClass.CPU_SERVER): "graviton3",  # Neoverse-V1: dot product, i8mm, bf16
    (False, DeviceClass.RASPBERRY_PI): "rpi4",  # Cortex-A72: NEON, no dot product
    (False, DeviceClass.JETSON): "jetson_agx_orin",
}


def make_hw(*, features: tuple[str, ...] | None = None, usable: int | None = None, is_x86: bool = True,
            device_class: str = "cpu_server") -> HardwareProfile:
    """A real profile of an x86 or ARM machine of `device_class`, with its feature set or usable cores replaced.

    The default is the 2-core x86 container (EPYC 7763, AVX2, no int8 dot-product instructions).
    """
    key = (is_x86, DeviceClass(device_class))
    if key not in _TREES:
        raise ValueError(f"no fixture tree for x86={is_x86} {device_class}; have {sorted(map(str, _TREES))}")
    hw = fixture_profile(_TREES[key])
    assert hw.cpu.is_x86 == is_x86 and hw.device_class == key[1], f"{_TREES[key]} is not {key}"
    if features is None and usable is None:
        return hw
    return with_cpu(hw, features=features, **({} if usable is None else {"usable_cores": usable}))


@pytest.fixture(scope="session")
def fake_hw() -> Callable[..., HardwareProfile]:
    """The hardware-profile factory (`make_hw`), for tests that need a particular CPU or board."""
    return make_hw
