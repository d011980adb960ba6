"""--device: every measured candidate projected onto the board, labelled; an unknown name fails before measuring."""

from __future__ import annotations

import pytest

from planner.hardware.boards import UnknownDeviceError
from planner.pipeline.edge_projection import edge_projection, resolve_device
from planner.pipeline.run import PlanOptions, run_plan
from planner.results import Baseline, CandidateResult, PlanResults, Status
from planner.results.values import LatencyStats, ModelSummary


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=10, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.0)


def test_measured_candidates_are_projected_with_their_basis():
    base = Baseline(model=ModelSummary(name="m", source="demo:m", kind="torch", parameters=1, size_bytes=4_000_000),
                    input_shape=(1, 4), flops_per_sample=2_000_000, peak_activation_bytes=10_000,
                    latency_ms=_latency(3.0))
    ok = CandidateResult(plugin="edge.ternary", label="ternary", config={}, precision="ternary", status=Status.OK,
                         latency_ms=_latency(1.0), size_bytes=300_000)
    failed = CandidateResult(plugin="edge.int8", label="int8", config={}, precision="int8", status=Status.FAILED)
    out = edge_projection(PlanResults(baseline=base, candidates=(ok, failed)), resolve_device("rpi5", "", None))
    assert out.profile.name == "rpi5" and out.chosen_by == "--device"
    (row,) = out.candidates
    assert row.label == "ternary" and row.size_bytes == 300_000 and row.measured_p50_ms == 1.0
    assert row.estimate_ms is not None and row.estimate_ms > 0 and row.basis.startswith("estimate, not measured")


def test_off_a_board_without_device_there_is_no_profile():
    assert resolve_device(None, "cpu_server", None) is None
    assert resolve_device(None, "raspberry_pi", "Raspberry Pi 5 Model B").name == "rpi5"


def test_an_unknown_device_fails_before_anything_is_measured():
    with pytest.raises(UnknownDeviceError, match="unknown edge device 'rpi9'"):
        run_plan(PlanOptions(model="demo:does-not-exist", device="rpi9"))


def test_finetune_steps_without_labels_say_what_to_pass(tmp_path):
    from planner.errors import PlannerError
    from planner.pipeline.run import _finetune_steps

    with pytest.raises(PlannerError) as err:
        _finetune_steps(10, None)
    assert "needs labelled data" in err.value.problem and "--val-data" in err.value.fix
    with pytest.raises(PlannerError, match="at least 1"):
        _finetune_steps(0, tmp_path)


def test_a_named_board_sets_the_default_requirements(tmp_path):
    """Planning for a Raspberry Pi from a server: the Pi's tier budgets apply, not the server's."""
    from hardware_profiles import two_core_x86

    from planner.pipeline.session import PlanSession

    session = PlanSession()
    session.hw = two_core_x86()
    here = session.set_requirements()
    board = session.set_requirements(device_class=resolve_device("rpi5", "", None).board_kinds[0])
    assert board.memory_budget_bytes == 50 * 2**20 and board.model_size_budget_bytes == 5 * 2**20
    assert here.memory_budget_bytes > board.memory_budget_bytes
    assert "Edge" in board.sources["memory_budget_bytes"]
