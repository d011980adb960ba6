"""Parallel streams on the real runtimes: ONNX Runtime sessions in threads, OpenVINO's THROUGHPUT queue.

demo:tiny through its shared ONNX export on this CPU; counts and settings are asserted, never times.
"""

from __future__ import annotations

import pytest

from planner.measure.evaluate import MeasureJob, measure
from planner.measure.streams import ParallelRuns, measure_streams
from planner.onnx.session import OrtSession
from planner.plugins import CandidateSpec, ModelRef
from planner.results import results_from_data, to_data
from planner.results.values import PlanResults
from targets.cpu.openvino import OpenVinoSession


@pytest.fixture(scope="module")
def onnx_path(shared_ctx) -> str:
    from planner.onnx.export import shared_onnx

    return str(shared_onnx(shared_ctx).path)


def test_ort_splits_its_threads_over_parallel_sessions(tiny, onnx_path) -> None:
    session = OrtSession(onnx_path, {"intra_op_threads": 2, "inter_op_threads": 1})
    runs = session.parallel_runs()
    assert isinstance(runs, ParallelRuns)
    assert runs.streams == 2 and runs.basis.startswith("2 ONNX Runtime sessions of 1 thread each")
    feed = tiny.make_feeds(batch=4, seed=3)[0]
    result = measure_streams(session, session.prepare(feed), batch=4, quick=True)
    assert result is not None and result.skipped == ""
    assert [(p.batch, p.streams) for p in result.points] == [(4, 1), (4, 2)]
    assert all(p.samples_per_s > 0 for p in result.points)


def test_ort_on_one_thread_says_there_is_no_room(onnx_path) -> None:
    reason = OrtSession(onnx_path, {"intra_op_threads": 1}).parallel_runs()
    assert reason == "1 thread: no room for parallel ONNX Runtime sessions"


def test_openvino_serves_streams_from_its_throughput_hint(tiny, onnx_path) -> None:
    config = {"precision": "fp32", "hint": "LATENCY", "threads": 2, "static_shape": False}
    session = OpenVinoSession(onnx_path, config, inputs=tiny.inputs)
    runs = session.parallel_runs()
    if isinstance(runs, str):  # a CPU where the hint picks one stream says so
        assert "THROUGHPUT hint chose" in runs
        return
    assert runs.streams >= 2 and "THROUGHPUT hint" in runs.basis and "AsyncInferQueue" in runs.basis
    feed = tiny.make_feeds(batch=2, seed=3)[0]
    result = measure_streams(session, session.prepare(feed), batch=2, quick=True)
    assert result is not None and [p.streams for p in result.points] == [1, runs.streams]
    assert all(p.samples_per_s > 0 for p in result.points)


@pytest.mark.worker
def test_the_worker_records_streams_at_the_best_batch(tiny, onnx_path) -> None:
    spec = CandidateSpec(plugin="cpu.onnxruntime", label="ort 2t",
                         config={"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
                                 "intra_op_threads": 2, "inter_op_threads": 1},
                         artifacts={"onnx": onnx_path}, threads=2)
    result, _ = measure(MeasureJob(model=ModelRef.of(tiny), spec=spec, quick=True, sweep_max_batch=4,
                                   fidelity_batches=1), timeout_s=240)
    assert result.measured, result.reason
    best = max(result.throughput, key=lambda p: p.samples_per_s)
    assert [(p.batch, p.streams) for p in result.streams] == [(best.batch, 1), (best.batch, 2)]
    peak = result.peak_rate()
    assert peak is not None and peak.samples_per_s == max(
        [p.samples_per_s for p in result.throughput] + [p.samples_per_s for p in result.streams])
    # The new fields travel through results.json and back.
    again = results_from_data(to_data(PlanResults(candidates=(result,))))
    assert again.candidates[0].streams == result.streams
