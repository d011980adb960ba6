"""Helpers for the CPU plugin tests: real hardware profiles from the fixture trees, and the torch reference output."""

from __future__ import annotations

import numpy as np
from hardware_profiles import two_core_x86, with_cpu

from planner.hardware import HardwareProfile

_UNCHANGED = object()


def fake_hw(*, usable: int | None = None, physical: int | None | object = _UNCHANGED, logical: int | None = None,
            features: tuple[str, ...] | None = None) -> HardwareProfile:
    """The 2-core x86 container profile (EPYC 7763, AVX2, no bf16), with any core counts or features replaced.

    Detected from the epyc_container_cgroup_v2 fixture tree: 2 usable cores of 4 physical, 8 logical.
    `physical=None` means the physical core count is unknown; `features` replaces the whole feature set.
    """
    hw = two_core_x86()
    changes: dict[str, object] = {}
    if usable is not None:
        changes["usable_cores"] = usable
    if physical is not _UNCHANGED:
        changes["physical_cores"] = physical
    if logical is not None:
        changes["logical_cores"] = logical
    return with_cpu(hw, features=features, **changes) if changes or features is not None else hw


def torch_output(model, feed: dict[str, np.ndarray]) -> np.ndarray:
    """The reference: the loaded torch module on one feed (its arrays as positional arguments), as float32 numpy."""
    import torch

    with torch.inference_mode():
        return model.module(*(torch.from_numpy(a) for a in feed.values())).float().numpy()
