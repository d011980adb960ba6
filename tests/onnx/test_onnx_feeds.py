"""Pairing a model's inputs with a graph's: by name, by position when renamed, an error otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from planner.models.spec import ModelInputs, parse_input
from planner.onnx.feeds import feed_for, match_inputs, ordered_arrays

TEXT = ModelInputs((parse_input("input_ids:1x8:int64"), parse_input("attention_mask:1x8:int64")))
FEED = {"input_ids": np.zeros((1, 8), np.int64), "attention_mask": np.ones((1, 8), np.int64)}


def test_names_that_match_pair_by_name_in_the_graphs_order() -> None:
    keyed = feed_for(["attention_mask", "input_ids"], FEED)
    assert list(keyed) == ["attention_mask", "input_ids"]
    assert (keyed["attention_mask"] == 1).all()
    assert match_inputs(["attention_mask", "input_ids"], TEXT)["input_ids"].name == "input_ids"


def test_renamed_inputs_pair_by_position() -> None:
    keyed = feed_for(["arg0", "arg1"], FEED)
    assert (keyed["arg1"] == 1).all()
    assert match_inputs(["arg0", "arg1"], TEXT)["arg1"].name == "attention_mask"


def test_too_few_arrays_is_an_error_that_names_both_sides() -> None:
    with pytest.raises(ValueError, match="the feed has 1 inputs"):
        ordered_arrays(["a", "b"], {"x": np.zeros(1)})
    with pytest.raises(ValueError, match="input_ids"):
        match_inputs(["a"], TEXT)
