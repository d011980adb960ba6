"""The interaction step measures a cell once: a quick plan spends one round, and a cell two pairs share
(the baseline, the hardware candidate) is reused by the second pair."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planner.events import CancelToken
from planner.pipeline import interaction
from planner.results import CandidateResult, Declared, Status
from planner.results.interaction import InteractionCell


def _cand(plugin: str, label: str, config: dict, speedup: float) -> CandidateResult:
    spec = {"plugin": plugin, "label": label, "config": config, "precision": "fp32"}
    return CandidateResult(plugin=plugin, label=label, config=config, precision="fp32", status=Status.OK,
                           speedup=speedup, spec=spec, declared=Declared(transforms_model="transform" in config))


@pytest.fixture
def timed(monkeypatch) -> list[str]:
    """Every cell measured, by label; each one 'measures' 100 ms, or 40 ms with the transform applied."""
    calls: list[str] = []

    def fake_time(run, name, label, spec, ref, *, timeout_s):
        calls.append(label)
        return InteractionCell(name, label, p50_ms=40.0 if ref.transform else 100.0)

    monkeypatch.setattr(interaction, "_time", fake_time)
    return calls


def _run(tiny, *, quick: bool) -> SimpleNamespace:
    baseline = SimpleNamespace(spec={"plugin": "torch.eager", "label": "torch eager fp32 (cpu)", "config": {}})
    return SimpleNamespace(model=tiny, baseline=baseline, quick=quick, cancel=CancelToken(),
                           on_event=lambda event: None)


def _study(tiny, quick: bool):
    hw = _cand("cpu.onnxruntime", "ort 2t", {}, 2.0)
    fold = _cand("architecture.fold", "fold", {"transform": {"plugin": "architecture.fold"}}, 1.2)
    align = _cand("architecture.align", "align", {"transform": {"plugin": "architecture.align"}}, 1.1)
    run = _run(tiny, quick=quick)
    first = interaction._measure_pair(run, fold, hw, timeout_s=10, readings=(shared := {}))
    second = interaction._measure_pair(run, align, hw, timeout_s=10, readings=shared)
    return first, second


def test_a_quick_study_measures_each_cell_once_and_reuses_shared_ones(tiny, timed) -> None:
    first, second = _study(tiny, quick=True)
    assert timed == ["torch eager fp32 (cpu)", "fold", "ort 2t", "fold + ort 2t", "align", "align + ort 2t"]
    assert "one round" in first.method and "reused" not in first.method
    assert "the baseline and hardware cells reused" in second.method
    assert second.cell("baseline").label == "torch eager fp32 (cpu)" and second.cell("hardware").p50_ms == 100.0
    assert second.cell("combined").speedup == pytest.approx(2.5)


def test_a_full_study_takes_two_rounds_but_still_shares_cells(tiny, timed) -> None:
    _, second = _study(tiny, quick=False)
    assert timed.count("torch eager fp32 (cpu)") == 2 and timed.count("ort 2t") == 2
    assert timed.count("align") == 2 and "two rounds" in second.method


def test_a_quick_plan_times_only_the_combined_cell_and_says_the_others_are_its_own_figures(tiny, timed) -> None:
    """The baseline, architecture and hardware cells are the figures the table ranks: one number per fact."""
    from planner.pipeline.budget import Budget
    from planner.results.values import LatencyStats

    def lat(p50: float) -> LatencyStats:
        return LatencyStats(samples=20, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                            p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.01)

    import dataclasses

    hw = dataclasses.replace(_cand("cpu.onnxruntime", "ort 2t", {}, 2.0), latency_ms=lat(50.0), wall_s=1.0)
    fold = dataclasses.replace(_cand("architecture.fold", "fold", {"transform": {"plugin": "architecture.fold"}}, 1.25),
                               latency_ms=lat(80.0), wall_s=1.0)
    run = _run(tiny, quick=True)
    run.baseline = SimpleNamespace(spec=run.baseline.spec, latency_ms=lat(100.0))
    run.budget = Budget()
    found = interaction.measure_interactions(run, [fold, hw], [1, 0], timeout_s=10)
    assert timed == ["fold + ort 2t"]
    (study,) = found
    assert [c.p50_ms for c in study.cells] == [100.0, 80.0, 50.0, 40.0]
    assert "the baseline, architecture and hardware cells are the plan's own figures" in study.method
    assert study.method.startswith("the combined cell timed")
