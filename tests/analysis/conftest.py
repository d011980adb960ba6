"""Fixtures for the analysis tests: fake ceilings with round numbers and a fixed seed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch


@dataclass(frozen=True)
class FakeCeilings:
    """A machine with 1e11 FLOP/s fp32 and 1e10 B/s: the ridge point is exactly 10 FLOP/B."""

    peak_flops: dict[str, float] = field(default_factory=lambda: {"fp32": 1e11, "fp16": 4e11})
    bandwidth_bytes_per_s: float = 1e10
    source: str = "test"
    details: dict = field(default_factory=dict)

    def peak(self, precision: str = "fp32") -> float:
        """Peak FLOP/s at this precision."""
        return self.peak_flops[precision]

    def ridge_point(self, precision: str = "fp32") -> float:
        """FLOP/byte where the roofs meet."""
        return self.peak(precision) / self.bandwidth_bytes_per_s


@pytest.fixture
def ceilings() -> FakeCeilings:
    """Ceilings with peak 1e11 FLOP/s and 1e10 B/s (ridge 10 FLOP/B)."""
    return FakeCeilings()


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)
