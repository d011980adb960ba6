"""Edge budgets judge what the candidate itself needs: its worker's peak memory and its file on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.advice.requirements import Requirements
from planner.codec import to_data
from planner.measure.evaluate import MeasureJob, measure
from planner.pipeline.session import requirement_checks
from planner.plugins import ModelRef, PlanContext, get_plugin
from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections import device_targets
from planner.results.values import PlanResults
from targets.edge.ternary import TernaryPlugin

pytestmark = pytest.mark.worker  # every test reads candidates measured in their own worker processes


@pytest.fixture(scope="module")
def measured_candidates(tiny, fake_hw, tmp_path_factory):
    """demo:tiny's ternary candidate (ONNX Runtime only) and PyTorch eager, each measured in its own worker."""
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path_factory.mktemp("edge_memory"))
    ternary = next(iter(TernaryPlugin().candidates(ctx)))
    eager = next(iter(get_plugin("torch.eager").candidates(ctx)))
    results = {}
    for name, spec in (("ternary", ternary), ("torch", eager)):
        result, _ = measure(MeasureJob(model=ModelRef.of(tiny), spec=spec, quick=True, fidelity_batches=1))
        assert result.status == "ok", result.reason
        results[name] = result
    return results, Path(ternary.artifacts["onnx"])


def test_the_onnxruntime_worker_peak_is_its_own(measured_candidates):
    results, _ = measured_candidates
    ternary, torch = results["ternary"], results["torch"]
    assert ternary.memory_basis == torch.memory_basis == "worker process peak RSS"
    # PyTorch alone is a few hundred MB resident; the ONNX Runtime worker never imports it.
    assert ternary.peak_memory_bytes < torch.peak_memory_bytes / 2


def test_device_targets_table_uses_the_worker_peak_and_the_file_on_disk(measured_candidates, tiny):
    results, packed = measured_candidates
    plan = {"target": "edge", "model": {"size_bytes": tiny.size_bytes},
            "candidates": [to_data(results["ternary"]), to_data(results["torch"])]}
    table = "\n".join(device_targets.render(ReportData(plan)))
    ternary_row = next(line for line in table.splitlines() if line.startswith(f"| {results['ternary'].label} |"))
    assert f"| {fmt.size(results['ternary'].peak_memory_bytes)} | {fmt.size(packed.stat().st_size)} |" in ternary_row
    torch_row = next(line for line in table.splitlines() if line.startswith(f"| {results['torch'].label} |"))
    assert f"| {fmt.size(tiny.size_bytes)} |" in torch_row  # runs the weights as loaded


def test_requirement_checks_judge_the_file_on_disk_and_the_worker_peak(measured_candidates, tiny):
    results, packed = measured_candidates
    ternary, torch = results["ternary"], results["torch"]
    size = packed.stat().st_size
    # demo:tiny's weights (6 KB) are smaller than any ONNX file of it: the file's graph outweighs them.
    assert fmt.size(size) != fmt.size(tiny.size_bytes)
    between = (ternary.peak_memory_bytes + torch.peak_memory_bytes) // 2
    req = Requirements(memory_budget_bytes=between, model_size_budget_bytes=size + 1)
    plan = PlanResults(model={"size_bytes": tiny.size_bytes, "parameters": tiny.parameters},
                       candidates=(ternary, torch))
    checks = {c.name: c for c in requirement_checks(plan, req, subject=ternary)}
    assert checks["model_size"].met is True and checks["model_size"].measured == fmt.size(size)
    assert checks["memory"].met is True and checks["memory"].measured == fmt.size(ternary.peak_memory_bytes)
    torch_checks = {c.name: c for c in requirement_checks(plan, req, subject=torch)}
    assert torch_checks["memory"].met is False
    assert torch_checks["model_size"].measured == fmt.size(tiny.size_bytes)  # no file: the weights
