"""Run in a spawned worker: what a measuring job imported (for tests that check what a worker loads)."""

from __future__ import annotations

import sys


def imports_of_job(job):
    """Run one measuring job here and say whether PyTorch was imported before it and after it."""
    from planner.measure.evaluate import run_job

    before = "torch" in sys.modules
    value = run_job(job)
    return before, "torch" in sys.modules, sorted(value)
