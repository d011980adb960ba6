"""Decision-tree conditions: each answers the question its node asks, with the evidence."""

from __future__ import annotations

from plugin_catalog import CATALOG

from planner.advice import defaults_for, evaluate_tree


def test_threads_equal_to_the_cores_is_yes_even_with_extra_inter_op_threads(cpu_server, make_baseline) -> None:
    path = evaluate_tree("cpu", cpu_server, make_baseline(intra=2, inter=2), defaults_for("cpu_server"),
                         catalog=CATALOG)
    visited = {v.id: v for v in path.visited}
    assert visited["cpu.2"].result == "yes"
    assert "inter-op threads 2" in visited["cpu.2"].evidence
    # Setting the intra-op threads is then already in force: done, not recommended; the inter-op advice stays.
    assert visited["cpu.3a"].result == "already done"
    assert "left to you: inter-op threads 2: set it to 1" in visited["cpu.3a"].evidence
    assert "threads" not in [a.action.id for a in path.actions]


def test_fewer_threads_than_cores_is_no(cpu_server, make_baseline) -> None:
    path = evaluate_tree("cpu", cpu_server, make_baseline(intra=1, inter=1), defaults_for("cpu_server"),
                         catalog=CATALOG)
    assert {v.id: v for v in path.visited}["cpu.2"].result == "no"
