"""Tiny models built in code for the analysis tests, one pattern each."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class CleanNet(nn.Module):
    """A hardware-friendly little CNN: 3x3 convs, aligned channels, ReLU, steady stride-2 downsampling."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 24, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(24, 32, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        return self.head(torch.flatten(self.pool(self.body(x)), 1))


class DenseHeadNet(nn.Module):
    """A small conv feeding a huge Linear that holds nearly all the parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 16 * 16, 512)
        self.out = nn.Linear(512, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        return self.out(torch.relu(self.fc(torch.flatten(torch.relu(self.conv(x)), 1))))


class FunctionalGeluNet(nn.Module):
    """GELU called as F.gelu inside forward, not as a module."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        x = F.gelu(self.conv(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DecoderNet(nn.Module):
    """Downsamples, then upsamples its features (a decoder), never the input itself."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Segment."""
        return self.head(self.up(torch.relu(self.down(x))))


class UpsampleModuleNet(nn.Module):
    """Upsamples the input with an nn.Upsample module before a small conv stack."""

    def __init__(self) -> None:
        super().__init__()
        self.resize = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        x = torch.relu(self.conv2(torch.relu(self.conv(self.resize(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class TinyTextNet(nn.Module):
    """Two int64 inputs (token ids and an attention mask): embedding, a masked mean, an MLP head."""

    def __init__(self, vocab: int = 50, dim: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(dim, 32)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(32, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Class logits from the mean of the unmasked token states."""
        x = self.act(self.fc1(self.embed(input_ids)))
        mask = attention_mask.to(x.dtype)[:, :, None]
        pooled = (x * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.fc2(pooled)
