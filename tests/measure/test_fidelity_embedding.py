"""Embeddings: judged by each sample's direction and by the neighbours a search over them would return."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from planner.measure.fidelity import compare, judge_outputs
from planner.results.values import OutputKind


class Embedder(torch.nn.Module):
    """A small sentence-embedding head: a projection, then each vector scaled to length 1."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.proj = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 24))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(self.proj(x), dim=1)


def _round_weights(model: Embedder, levels: int) -> Embedder:
    """The same model with each weight tensor rounded to `levels` steps over its range (what INT8 does, coarser)."""
    copy = Embedder()
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        for p in copy.parameters():
            step = (p.max() - p.min()) / levels
            p.copy_(torch.round(p / step) * step)
    return copy


@pytest.fixture(scope="module")
def outputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    model = Embedder()
    # Clustered inputs, as sentences on a few topics are: neighbours are then a real question.
    rng = np.random.default_rng(3)
    centres = rng.normal(0, 1, size=(8, 32))
    x = torch.tensor(centres[rng.integers(0, 8, 96)] + rng.normal(0, 0.6, size=(96, 32)), dtype=torch.float32)
    with torch.no_grad():
        return model(x).numpy(), _round_weights(model, 255)(x).numpy(), _round_weights(model, 6)(x).numpy()


def test_a_normalised_output_is_read_as_an_embedding(outputs):
    ref, fine, _ = outputs
    fid = compare([ref], [fine])
    assert fid.output_kind == OutputKind.EMBEDDING and "has length 1" in fid.kind_basis
    assert fid.sample_cosine is not None and fid.sample_cosine > 0.999
    assert fid.neighbour_kept is not None and fid.neighbour_low is not None and fid.top5_kept is not None
    # Probabilities sum to 1 but are never negative: still class scores.
    probs = np.exp(ref) / np.exp(ref).sum(axis=1, keepdims=True)
    assert compare([probs], [probs]).output_kind == OutputKind.CLASSES


def test_a_coarse_copy_loses_neighbours_and_says_so_with_its_interval(outputs):
    ref, fine, coarse = outputs
    why, decided_by, fid = judge_outputs([ref], [fine], precision="int8")
    assert why == "" and fid is not None and fid.neighbour_kept is not None and fid.neighbour_kept >= 0.9
    assert "nearest neighbour kept for" in decided_by and "top-5 neighbours kept" in decided_by
    why, decided_by, fid = judge_outputs([ref], [coarse], precision="int8")
    assert fid is not None and fid.sample_cosine is not None and fid.neighbour_kept is not None
    assert fid.neighbour_kept < 0.9 and (fid.top5_kept or 0) < 1.0
    # Rejected by what a search would see when the interval says so; otherwise not established, never passed.
    assert why.startswith(("cosine per sample", "nearest neighbour kept for")) or fid.cannot_judge
    assert "95% interval" in (why or fid.cannot_judge)


def test_the_kind_can_be_given_for_an_unnormalised_embedding(outputs):
    ref, fine, _ = outputs
    fid = compare([ref * 3.0], [fine * 3.0], kind="embedding")
    assert fid.output_kind == OutputKind.EMBEDDING and fid.sample_cosine is not None and fid.sample_cosine > 0.999
    assert compare([ref[:2]], [fine[:2]], kind="embedding").neighbour_kept is None  # two samples: no neighbour test
