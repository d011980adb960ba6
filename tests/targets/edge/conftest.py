"""Fixtures for the edge plugin tests: the tiny demo model and fake hardware profiles."""

from __future__ import annotations

import types
from typing import Callable

import pytest

from planner.models import load_model


def make_hw(*, features: tuple[str, ...] = ("avx2",), usable: int = 2, is_x86: bool = True,
            device_class: str = "cpu_server") -> types.SimpleNamespace:
    """A stand-in for HardwareProfile with the attributes the edge plugins read."""
    cpu = types.SimpleNamespace(usable_cores=usable, features=features, is_x86=is_x86)
    cpu.has = lambda name: name.lower() in cpu.features
    return types.SimpleNamespace(cpu=cpu, gpus=(), device_class=device_class)


@pytest.fixture(scope="session")
def edge_tiny():
    """demo:tiny, loaded once; tests that change weights work on their own copy."""
    return load_model("demo:tiny")


@pytest.fixture(scope="session")
def fake_hw() -> Callable[..., types.SimpleNamespace]:
    """The hardware-profile factory, for tests that need a particular CPU or board."""
    return make_hw
