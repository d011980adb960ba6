"""Helpers for the CPU plugin tests: a fake hardware profile and the torch reference output."""

from __future__ import annotations

import types

import numpy as np


def fake_hw(*, usable: int = 2, physical: int | None = 2, logical: int = 2,
            features: tuple[str, ...] = ("avx2",)) -> types.SimpleNamespace:
    """A stand-in for HardwareProfile with only the attributes the CPU plugins read."""
    cpu = types.SimpleNamespace(usable_cores=usable, physical_cores=physical,
                                logical_cores=logical, features=features)
    cpu.has = lambda name: name.lower() in cpu.features
    return types.SimpleNamespace(cpu=cpu, gpus=())


def torch_output(model, array: np.ndarray) -> np.ndarray:
    """The reference: the loaded torch module on one input, as float32 numpy."""
    import torch

    with torch.inference_mode():
        return model.module(torch.from_numpy(array)).float().numpy()
