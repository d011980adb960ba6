"""The interaction factor: combined speedup over the product of the two single speedups, and its verdict."""

from __future__ import annotations

import pytest

from planner.results import PlanResults, from_data, to_data
from planner.results.interaction import Interaction, InteractionCell, interaction_factor, verdict


def test_factor_and_verdicts() -> None:
    assert interaction_factor(1.5, 2.0, 3.3) == pytest.approx(1.1)
    assert verdict(1.1) == "amplify"
    assert verdict(0.9) == "conflict"
    assert verdict(1.0) == verdict(1.05) == verdict(0.95) == "independent"
    with pytest.raises(ValueError):
        interaction_factor(0.0, 2.0, 1.0)


def test_interactions_round_trip_and_old_results_read_without_them() -> None:
    cells = (InteractionCell("baseline", "torch eager", 100.0, 1.0), InteractionCell("architecture", "a", 50.0, 2.0),
             InteractionCell("hardware", "h", 80.0, 1.25), InteractionCell("combined", "a + h", 40.0, 2.5))
    pair = Interaction("a", "h", cells, factor=1.0, verdict="independent")
    data = to_data(PlanResults(interactions=(pair,)))
    back = from_data(data, PlanResults)
    assert back.interactions == (pair,)
    assert back.interactions[0].expected == pytest.approx(2.5)
    del data["interactions"]
    assert from_data(data, PlanResults).interactions == ()
