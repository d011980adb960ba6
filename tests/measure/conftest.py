"""Fixtures for the measurement tests: the timer's clock replaced by a fake one (measure_clock.py)."""

from __future__ import annotations

import pytest
from measure_clock import FakeClock

from planner.measure import timer as timer_module


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Replace the timer's clock with a fake one."""
    fake = FakeClock()
    monkeypatch.setattr(timer_module, "_now_ns", fake)
    return fake
