"""Shared fixtures: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import os

import pytest

# Keep measured ceilings and other caches inside the test session, not the user's home.
os.environ.setdefault("PLANNER_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "planner"))


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    """Skip tests marked `gpu` where no CUDA device exists, saying why."""
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; torch.cuda.is_available() is False here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cli(capsys):
    """Run `planner ARGS` in-process; returns (exit status, stdout, stderr)."""
    from planner.cli import main

    def run(*args: str):
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
