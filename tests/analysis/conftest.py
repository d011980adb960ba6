"""Fixtures for the analysis tests: ceilings with round numbers and a fixed seed."""

from __future__ import annotations

import pytest
import torch

from planner.hardware import Ceilings


@pytest.fixture
def ceilings() -> Ceilings:
    """Real Ceilings with round numbers: peak 1e11 FLOP/s fp32 (4e11 fp16) and 1e10 B/s, so the ridge is 10 FLOP/B."""
    return Ceilings(peak_flops={"fp32": 1e11, "fp16": 4e11}, bandwidth_bytes_per_s=1e10, source="test")


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)
