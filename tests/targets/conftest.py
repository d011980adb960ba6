"""Fixtures for the plugin tests: demo:text, and one plan context per session (demo:tiny is tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_plugin_helpers import fake_hw

from planner.models import load_model
from planner.plugins import PlanContext


@pytest.fixture(scope="session")
def shared_ctx(tiny, tmp_path_factory) -> PlanContext:
    """One plan context whose ONNX export is shared by every ONNX-based plugin test."""
    return PlanContext(hw=fake_hw(), model=tiny, workdir=Path(tmp_path_factory.mktemp("plan")))


@pytest.fixture(scope="session")
def text():
    """demo:text: two int64 inputs (input_ids, attention_mask) of 1x64, a two-block encoder (~180k parameters)."""
    return load_model("demo:text")


@pytest.fixture(scope="session")
def text_ctx(text, tmp_path_factory) -> PlanContext:
    """A quick plan context for demo:text whose one ONNX export is shared by the ONNX-based plugin tests."""
    return PlanContext(hw=fake_hw(), model=text, workdir=Path(tmp_path_factory.mktemp("plan-text")), quick=True)


@pytest.fixture
def plain_cpu_hw():
    """A 2-core x86 container without native bf16: the epyc_container_cgroup_v2 fixture tree's profile."""
    return fake_hw()


@pytest.fixture(scope="session")
def tiny_onnx(shared_ctx):
    """demo:tiny loaded back from the plan's shared ONNX export: an ONNX-only model."""
    from planner.onnx.export import shared_onnx

    return load_model(str(shared_onnx(shared_ctx).path))
