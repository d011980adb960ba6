"""Fixtures for the hardware tests: fake root trees and a fresh copy of one to edit."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hardware_trees import FIXTURES


@pytest.fixture
def fixture_root() -> Callable[[str], Path]:
    """The fake root tree for a named machine, e.g. fixture_root('rpi5')."""

    def get(name: str) -> Path:
        root = FIXTURES / name
        assert root.is_dir(), f"no fixture tree {root}"
        return root

    return get


@pytest.fixture
def editable_root(tmp_path: Path) -> Callable[[str], Path]:
    """A writable copy of a fixture tree, for tests that add cgroup files or break things."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        return target

    return copy

