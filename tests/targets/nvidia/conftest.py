"""Fixtures for the NVIDIA plugin tests: the tiny demo model and fake hardware profiles."""

from __future__ import annotations

import types
from typing import Callable

import pytest

from planner.models import load_model


def _cpu(features: tuple[str, ...] = ("avx2",), usable: int = 2) -> types.SimpleNamespace:
    cpu = types.SimpleNamespace(usable_cores=usable, features=features, is_x86=True)
    cpu.has = lambda name: name.lower() in cpu.features
    return cpu


@pytest.fixture(scope="session")
def nv_tiny():
    """demo:tiny, loaded once (the plugins never mutate the loaded module)."""
    return load_model("demo:tiny")


@pytest.fixture
def hw_without_gpu() -> types.SimpleNamespace:
    """A CPU server with no NVIDIA GPU, like the machine these tests were written on."""
    return types.SimpleNamespace(cpu=_cpu(), gpus=(), device_class="cpu_server")


@pytest.fixture
def hw_with_gpu() -> Callable[..., types.SimpleNamespace]:
    """A factory for a profile with one NVIDIA GPU of a given compute capability."""

    def make(cc: tuple[int, int] | None = (8, 0), name: str = "NVIDIA A100-SXM4-40GB",
             memory: int = 40 << 30) -> types.SimpleNamespace:
        gpu = types.SimpleNamespace(name=name, memory_total_bytes=memory, compute_capability=cc,
                                    tensor_core_generation=None)
        return types.SimpleNamespace(cpu=_cpu(), gpus=(gpu,), device_class="datacenter_gpu")

    return make
