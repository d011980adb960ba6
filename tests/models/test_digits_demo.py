"""demo:digits: trained once at first use, cached by recipe version, with a held-out set in the --val-data layout."""

from __future__ import annotations

import pytest
import torch

from planner.models import digits
from planner.models.valdata import load_val_data


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Train once into a private cache folder; every test in the module reads that cache."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLANNER_CACHE_DIR", str(cache))
        model = digits.trained_model()
        yield model, cache


def test_held_out_accuracy_is_real(trained):
    model, _ = trained
    split = digits.load_split()
    assert digits.accuracy(model, split.val_x, split.val_y) > 0.90
    stats = digits.training_stats()
    assert stats["held_out_accuracy"] > 0.90 and stats["train_seconds"] > 0


def test_second_load_hits_the_cache(trained, monkeypatch):
    model, cache = trained
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(cache))

    def no_training(*args, **kwargs):
        raise AssertionError("the cached weights should have been loaded, not trained again")

    monkeypatch.setattr(digits, "train", no_training)
    again = digits.trained_model()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


def test_another_recipe_version_retrains(trained, monkeypatch):
    _, cache = trained
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(cache))
    monkeypatch.setattr(digits, "RECIPE_VERSION", "digits-test-other")
    assert not digits.weights_path().exists()
    calls = []
    real_train = digits.train
    monkeypatch.setattr(digits, "EPOCHS", 1)
    monkeypatch.setattr(digits, "train", lambda split=None: calls.append(1) or real_train(split))
    digits.trained_model()
    assert calls and digits.weights_path().exists()


def test_held_out_set_is_validation_data(trained, monkeypatch):
    _, cache = trained
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(cache))
    folder = digits.validation_folder()
    pairs = load_val_data(folder)
    split = digits.load_split()
    assert sum(len(labels) for _, labels in pairs) == len(split.val_y) == digits._held_out_count()
    feed, labels = pairs[0]
    assert feed["x"].shape[1:] == (1, 8, 8) and feed["x"].max() <= 16 and labels is not None
