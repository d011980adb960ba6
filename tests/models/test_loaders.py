"""Model loaders: what a user gets from a torchvision name without pretrained weights."""

from __future__ import annotations

import torch
from torch import nn

from planner.models import load_model
from planner.models.loaders import settle_batchnorm


def test_random_torchvision_model_keeps_its_output_scale():
    # Untrained mobilenet_v3_small with default BatchNorm statistics gives outputs near 1e-10,
    # which any INT8 candidate rounds to zero; with statistics from inputs they are O(0.01-1).
    model = load_model("tv:mobilenet_v3_small")
    with torch.no_grad():
        out = model.module(torch.randn(2, 3, 224, 224))
    assert out.abs().max() > 1e-3
    assert any("BatchNorm statistics" in note for note in model.notes)
    assert not model.module.training


def test_settle_batchnorm_is_deterministic_and_leaves_plain_models_alone():
    def net() -> nn.Module:
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())

    a, b = net(), net()
    assert settle_batchnorm(a, (1, 3, 8, 8)) and settle_batchnorm(b, (1, 3, 8, 8))
    assert torch.equal(a[1].running_var, b[1].running_var)
    assert not torch.allclose(a[1].running_var, torch.ones(4))
    assert a[1].momentum == 0.1  # restored for anyone who trains it later
    assert settle_batchnorm(nn.Linear(3, 2), (1, 3)) is False


def test_a_model_file_larger_than_the_memory_limit_is_refused_before_it_is_read(tmp_path, monkeypatch) -> None:
    """A 2 MiB file under a 1 MiB cgroup limit: the error names both sizes, and the file is never parsed."""
    import pytest

    import planner.hardware.memory_limits as memory_limits
    from planner.errors import PlannerError
    from planner.hardware.memory_limits import PlanLimits
    from planner.models import load_model

    model = tmp_path / "big.onnx"
    model.write_bytes(b"\0" * (2 << 20))  # not a valid ONNX file: reading it would fail differently
    monkeypatch.setattr(memory_limits, "current_limits",
                        lambda: PlanLimits(1 << 20, "cgroup v2", 1 << 19, 2))
    with pytest.raises(PlannerError) as caught:
        load_model(str(model))
    said = str(caught.value)
    assert "2 MiB" in said and "a 1 MiB memory limit (cgroup v2)" in said and "none was started" in said
