"""A worker that measures an ONNX Runtime or OpenVINO candidate never imports PyTorch (about 1.3 s a worker):
the model's ONNX file is all it opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.hardware import detect
from planner.measure.evaluate import MeasureJob
from planner.measure.worker import WorkerStatus, run_isolated
from planner.plugins import ModelRef, PlanContext, get_plugin

pytestmark = pytest.mark.worker
HERE = str(Path(__file__).resolve().parent)


@pytest.mark.parametrize("plugin", ["cpu.onnxruntime", "cpu.openvino"])
def test_a_runtime_candidates_worker_never_imports_torch(plugin: str, tiny, tmp_path: Path) -> None:
    pytest.importorskip(plugin.split(".")[1])
    from measure_probe import imports_of_job

    ctx = PlanContext(hw=detect(), model=tiny, workdir=tmp_path, quick=True)
    spec = next(iter(get_plugin(plugin).candidates(ctx)))
    job = MeasureJob(model=ModelRef.of(tiny), spec=spec, quick=True, fidelity_batches=1)
    outcome = run_isolated(imports_of_job, job, sys_path=[HERE], timeout_s=120)
    assert outcome.status is WorkerStatus.OK, outcome.reason
    before, after, keys = outcome.value
    assert not before and not after
    assert "outputs" in keys  # the job ran to its outputs, not an early failure
