"""Architecture transforms: exact ones compute the same outputs; approximate ones change what they say."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from planner.models.demo import EfficientClassifier, InefficientClassifier
from targets.architecture.transforms import (
    NotApplicableError,
    align_channels,
    drop_no_ops,
    fold_batchnorm,
    lowrank,
    prune_channels,
)


def _trained_like(model: nn.Module) -> nn.Module:
    """Give every BatchNorm non-trivial statistics and affine terms, so folding has something to get wrong."""
    torch.manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.normal_()
            m.bias.data.normal_()
    return model.eval()


def _inputs() -> torch.Tensor:
    return torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(2))


class ConvBnDrop(nn.Module):
    """conv -> bn -> relu -> dropout -> identity -> linear: every exact rewrite applies."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, padding=1)
        self.bn = nn.BatchNorm2d(12)
        self.drop = nn.Dropout(0.5)
        self.skip = nn.Identity()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(12, 5)
        self.bn1d = nn.BatchNorm1d(5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        x = self.skip(self.drop(torch.relu(self.bn(self.conv(x)))))
        return self.bn1d(self.fc(torch.flatten(self.pool(x), 1)))


def test_fold_batchnorm_is_exact_and_removes_the_norms() -> None:
    model = _trained_like(ConvBnDrop())
    model.bn1d.running_mean.normal_()
    folded, done = fold_batchnorm(model)
    x = _inputs()
    assert torch.allclose(folded(x), model(x), atol=1e-5)
    assert len(done.changed) == 2
    assert not any(isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d) for m in folded.modules())


def test_fold_batchnorm_on_the_efficient_demo_is_exact() -> None:
    model = _trained_like(EfficientClassifier())
    folded, done = fold_batchnorm(model)
    x = _inputs()
    assert len(done.changed) == 10
    assert torch.allclose(folded(x), model(x), atol=1e-4)


def test_fold_says_why_a_norm_after_an_activation_stays() -> None:
    _, done = fold_batchnorm(InefficientClassifier().eval())
    assert not done.changed
    assert any("follows gelu" in s for s in done.skipped)


def test_drop_no_ops_is_exact() -> None:
    model = _trained_like(ConvBnDrop())
    dropped, done = drop_no_ops(model)
    x = _inputs()
    assert torch.equal(dropped(x), model(x))
    assert sorted(done.changed) == ["drop removed", "skip removed"]


def test_align_channels_pads_every_misaligned_conv_exactly() -> None:
    model = _trained_like(InefficientClassifier())
    padded, done = align_channels(model, multiple=8)
    x = _inputs()
    assert torch.allclose(padded(x), model(x), atol=1e-5)
    outs = [m.out_channels for m in padded.modules() if isinstance(m, nn.Conv2d)]
    assert all(c % 8 == 0 for c in outs) and len(done.changed) == 6


def test_align_channels_only_touches_the_named_layers() -> None:
    model = InefficientClassifier().eval()
    padded, done = align_channels(model, layers=["conv1"])
    assert [line.split(":")[0] for line in done.changed] == ["conv1"]
    assert padded.get_submodule("conv2").out_channels == 83


def test_channel_rewrites_refuse_a_conv_feeding_an_addition() -> None:
    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Conv2d(3, 5, 3, padding=1)
            self.b = nn.Conv2d(5, 5, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.a(x)
            return y + self.b(y)

    _, done = align_channels(Residual().eval())
    assert not done.changed
    assert any("feeds 2 operations" in s for s in done.skipped)


def test_prune_keeps_multiples_of_eight_and_changes_the_outputs() -> None:
    model = InefficientClassifier().eval()
    pruned, done = prune_channels(model, ratio=0.25)
    x = _inputs()
    assert pruned(x).shape == model(x).shape
    assert all(m.out_channels % 8 == 0 for m in pruned.modules() if isinstance(m, nn.Conv2d))
    assert "conv5: 251 -> 192 output channels" in done.changed


def test_lowrank_at_full_rank_reproduces_the_layer_and_saves_nothing_below_break_even() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).eval()
    small, done = lowrank(model, fraction=0.25)
    assert done.changed == ["0: 256x256 -> rank 64 (" + done.changed[0].split("(")[1]]
    assert isinstance(small[0], nn.Sequential) and small[0][0].out_features == 64
    # A weight that is truly rank 64 is reproduced (within float rounding) at rank 64.
    with torch.no_grad():
        model[0].weight.copy_(torch.randn(256, 64) @ torch.randn(64, 256) / 16)
    exact, _ = lowrank(model, fraction=0.25)
    x = torch.randn(4, 256)
    assert torch.allclose(exact(x), model(x), atol=1e-3)
    _, none = lowrank(model, fraction=0.5)
    assert not none.changed and "would save under 20%" in none.skipped[0]


def test_tied_weights_and_torchscript_say_why_they_cannot_be_rewritten() -> None:
    tied = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    tied[1].weight = tied[0].weight
    with pytest.raises(NotApplicableError, match="tied weights"):
        fold_batchnorm(tied)
    scripted = torch.jit.script(nn.Sequential(nn.Linear(8, 8)))
    with pytest.raises(NotApplicableError, match="TorchScript"):
        lowrank(scripted, fraction=0.5)


def test_untraceable_forward_says_so() -> None:
    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.sum() > 0:
                return self.conv(x)
            return x

    with pytest.raises(NotApplicableError, match="cannot be traced"):
        fold_batchnorm(Branchy())


def test_align_channels_to_sixteen_for_int8_is_exact() -> None:
    model = _trained_like(InefficientClassifier())
    padded, done = align_channels(model, multiple=16)
    x = _inputs()
    assert torch.allclose(padded(x), model(x), atol=1e-5)
    outs = [m.out_channels for m in padded.modules() if isinstance(m, nn.Conv2d)]
    assert outs == [48, 96, 128, 144, 208, 256] and len(done.changed) == 6
