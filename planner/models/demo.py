"""The built-in demo models: an inefficient and an efficient classifier, and small models that show one pattern each.

Weights are random (seeded), which is enough to measure speed and memory and to check that an
optimized candidate still computes the same function. The exception is `demo:digits`, trained at
first use on real data and shipped with held-out validation data, so accuracy can be measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from planner.models.spec import ModelInputs, TensorSpec


class InefficientClassifier(nn.Module):
    """A CNN with deliberate hardware inefficiencies (large kernels, odd channels, GELU)."""

    def __init__(self, num_classes: int = 200) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 47, kernel_size=11, stride=2, padding=5)
        self.conv2 = nn.Conv2d(47, 83, kernel_size=7, stride=1, padding=3)
        self.gelu = nn.GELU()
        self.conv3a = nn.Conv2d(83, 127, kernel_size=3, padding=1)
        self.bn3a = nn.BatchNorm2d(127)
        self.conv3b = nn.Conv2d(127, 131, kernel_size=3, padding=1)
        self.bn3b = nn.BatchNorm2d(131)
        self.pool1 = nn.MaxPool2d(3, stride=1, padding=1)
        self.conv4 = nn.Conv2d(131, 193, kernel_size=5, padding=2)
        self.conv5 = nn.Conv2d(193, 251, kernel_size=1)
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(251, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify a batch of 3-channel images."""
        x = self.gelu(self.conv1(x))
        x = self.gelu(self.conv2(x))
        x = self.bn3a(self.gelu(self.conv3a(x)))
        x = self.pool1(x)
        x = self.bn3b(self.gelu(self.conv3b(x)))
        x = self.gelu(self.conv4(x))
        x = self.gelu(self.conv5(x))
        x = self.global_pool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def _efficient_block(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class EfficientClassifier(nn.Module):
    """The inefficient CNN redesigned: 3x3 stacks, channels divisible by 8, ReLU, a depthwise-separable head."""

    def __init__(self, num_classes: int = 200) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(inplace=True),
            nn.Conv2d(48, 48, 3, stride=1, padding=1), nn.BatchNorm2d(48), nn.ReLU(inplace=True),
        )
        self.block1 = _efficient_block(48, 96, 2)
        self.block2 = _efficient_block(96, 128, 2)
        self.block3 = _efficient_block(128, 192, 2)
        self.final_conv = nn.Sequential(
            nn.Conv2d(192, 192, 3, padding=1, groups=192, bias=False), nn.BatchNorm2d(192),
            nn.ReLU(inplace=True),
            nn.Conv2d(192, 256, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU(inplace=True),
        )
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify a batch of 3-channel images."""
        x = self.stem(x)
        x = self.block1(x)
        x = self.block2(x)
        x = self.block3(x)
        x = self.final_conv(x)
        x = self.global_pool(x)
        return self.classifier(torch.flatten(x, 1))


class UpsamplingClassifier(nn.Module):
    """A common anti-pattern: 64x64 inputs interpolated to 224x224 inside forward (12.25x the pixels)."""

    def __init__(self, num_classes: int = 2) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Upsample to ImageNet size, then classify."""
        x = nn.functional.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False)
        x = self.pool(self.features(x))
        return self.fc(torch.flatten(x, 1))


class TinyConvNet(nn.Module):
    """A very small CNN for fast tests and smoke runs (32x32 inputs)."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify a batch of tiny images."""
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class TextEncoderBlock(nn.Module):
    """One pre-norm transformer encoder block written in plain ops (exportable, hookable)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Attention over the unmasked tokens, then the MLP, each with a residual."""
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class TextClassifier(nn.Module):
    """A small transformer encoder over token ids with an attention mask (a BERT-like classifier)."""

    def __init__(self, vocab: int = 1000, dim: int = 64, heads: int = 4, depth: int = 2,
                 max_len: int = 256, num_classes: int = 4) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(TextEncoderBlock(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Class logits from the mean of the unmasked token states."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.tokens(input_ids) + self.positions(positions)
        mask = attention_mask.to(x.dtype)
        # 0 where a token may be attended to, a large negative number where it is padding.
        bias = ((1.0 - mask) * -1e4)[:, None, None, :]
        for block in self.blocks:
            x = block(x, bias)
        x = self.norm(x)
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        return self.head(pooled)


class FlatResponseNet(nn.Module):
    """A compact deep CNN whose outputs, with random weights, barely depend on its input.

    Ten 3x3 convolutions of 16 channels with ReLU, global average pooling and a linear layer. With
    the default random weights each layer passes on less of what came from the input than of what
    its biases add, so after ten of them the outputs for different inputs differ by a few millionths
    of their size: a raw cosine passes any candidate close to that shared part. The fidelity check
    must say it cannot judge here (see planner.measure.fidelity).
    """

    def __init__(self, depth: int = 10, channels: int = 16, num_classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for _ in range(depth):
            layers += [nn.Conv2d(cin, channels, 3, padding=1), nn.ReLU()]
            cin = channels
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores that are nearly the same for every input."""
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


TEXT_INPUTS = ModelInputs((
    TensorSpec(name="input_ids", shape=(1, 64), dtype="int64", low=0, high=1000,
               range_basis="the demo's vocabulary"),
    TensorSpec(name="attention_mask", shape=(1, 64), dtype="int64"),
))


@dataclass(frozen=True)
class DemoModel:
    """A demo model: how to build it, its default inputs, and a one-line description."""

    name: str
    factory: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    summary: str
    text_inputs: ModelInputs | None = None
    # Built-in validation data (a folder in the --val-data layout) for demos trained on real data.
    validation: Callable[[], Path] | None = None
    validation_basis: str = ""

    def inputs(self) -> ModelInputs:
        """The inputs the demo is measured with."""
        return self.text_inputs or ModelInputs.single(self.input_shape)


def _digits_model() -> nn.Module:
    from planner.models.digits import trained_model

    return trained_model()


def _digits_validation() -> Path:
    from planner.models.digits import validation_folder

    return validation_folder()


DEMOS: dict[str, DemoModel] = {
    d.name: d
    for d in (
        DemoModel("inefficient", InefficientClassifier, (1, 3, 224, 224),
                  "a hardware-unfriendly CNN (11x11/7x7 kernels, odd channels, GELU)"),
        DemoModel("efficient", EfficientClassifier, (1, 3, 224, 224),
                  "the same CNN redesigned (3x3 stacks, channels divisible by 8, ReLU, depthwise head)"),
        DemoModel("upsampling", UpsamplingClassifier, (1, 3, 64, 64),
                  "a common anti-pattern: 64x64 input upsampled to 224x224 inside forward"),
        DemoModel("tiny", TinyConvNet, (1, 3, 32, 32),
                  "a tiny CNN (32x32 input) for quick smoke runs"),
        DemoModel("flat", FlatResponseNet, (1, 3, 32, 32),
                  "a deep CNN (10 layers, 32x32 input) whose random-weight outputs barely depend on its input: "
                  "the fidelity check cannot judge a candidate on it"),
        DemoModel("text", TextClassifier, (1, 64),
                  "a small transformer encoder (input_ids and attention_mask, int64, 64 tokens)",
                  text_inputs=TEXT_INPUTS),
        DemoModel("digits", _digits_model, (1, 1, 8, 8),
                  "a small CNN trained at first use on scikit-learn's 8x8 digits, with a held-out set for accuracy",
                  validation=_digits_validation,
                  validation_basis="the digits demo's built-in held-out set"),
    )
}


def builtin_validation(name: str) -> tuple[Path, str] | None:
    """(folder, what it is) for the demo `name` when it ships its own validation data, else None."""
    demo = DEMOS.get(name)
    if demo is None or demo.validation is None:
        return None
    return demo.validation(), demo.validation_basis

DEFAULT_DEMO = "demo:inefficient"
