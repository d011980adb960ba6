"""NVIDIA plugins on a real GPU: every candidate builds, opens, runs, and matches torch fp32.

All tests here are marked `gpu`; the suite's conftest skips them where CUDA is unavailable.
"""

from __future__ import annotations

import numpy as np
import pytest
from hardware_profiles import gpu_server, nvml_gpu

from planner.hardware import HardwareProfile
from planner.measure.fidelity import DEFAULT_GATES
from planner.plugins import ModelRef, PlanContext, Precision
from targets.nvidia.batching import BatchingPlugin
from targets.nvidia.cuda_graphs import CudaGraphsPlugin
from targets.nvidia.fp16 import Fp16Plugin
from targets.nvidia.tensorrt import TensorRTPlugin
from targets.nvidia.torch_compile import TorchCompilePlugin

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_hw() -> HardwareProfile:
    """A real profile of an x86 server whose fake NVML presents the GPU torch sees."""
    import torch

    props = torch.cuda.get_device_properties(0)
    return gpu_server(nvml_gpu(name=props.name, memory=props.total_memory, cc=(props.major, props.minor)))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _assert_matches_fp32(plugin, spec, model) -> None:
    """Open the spec and compare its outputs with torch fp32 on the CPU, at the precision's gate."""
    import torch

    session = plugin.open(spec, ModelRef.of(model))
    batches = (1, 4) if spec.dynamic_batch else (model.inputs.batch,)
    gate = DEFAULT_GATES[spec.precision].min_cosine
    for batch in batches:
        for feed in model.make_feeds(batch=batch, count=3, seed=1000):
            out = session.to_numpy(session.run(session.prepare(feed)))
            if getattr(session, "needs_sync", False):
                session.sync()
            with torch.inference_mode():
                ref = model.module(*(torch.from_numpy(a) for a in feed.values())).float().numpy()
            assert out.shape == ref.shape, spec.label
            assert _cosine(out, ref) > gate, spec.label
            if spec.precision in (Precision.FP16, Precision.FP32):
                np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2, err_msg=spec.label)
    assert session.info()


MODELS = ["tiny", "text"]  # one float image input; two int64 inputs (input_ids, attention_mask)


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("plugin_cls", [Fp16Plugin, CudaGraphsPlugin, BatchingPlugin],
                         ids=lambda p: p.name)
def test_torch_level_candidates_run_and_match(plugin_cls, model_name, request, gpu_hw, tmp_path):
    model = request.getfixturevalue(model_name)
    plugin = plugin_cls()
    assert plugin.check(gpu_hw, model) == []
    specs = list(plugin.candidates(PlanContext(hw=gpu_hw, model=model, workdir=tmp_path)))
    assert specs
    for spec in specs:
        _assert_matches_fp32(plugin, spec, model)


@pytest.mark.parametrize("model_name", MODELS)
def test_torch_compile_quick_candidates_run_and_match(model_name, request, gpu_hw, tmp_path):
    model = request.getfixturevalue(model_name)
    plugin = TorchCompilePlugin()
    assert plugin.check(gpu_hw, model) == []
    ctx = PlanContext(hw=gpu_hw, model=model, workdir=tmp_path, quick=True)
    for spec in plugin.candidates(ctx):
        _assert_matches_fp32(plugin, spec, model)


@pytest.mark.parametrize("model_name", MODELS)
def test_cuda_graph_rejects_another_shape(model_name, request, gpu_hw, tmp_path):
    model = request.getfixturevalue(model_name)
    plugin = CudaGraphsPlugin()
    (spec,) = plugin.candidates(PlanContext(hw=gpu_hw, model=model, workdir=tmp_path))
    session = plugin.open(spec, ModelRef.of(model))
    assert set(session.info()["captured_shapes"]) == set(model.inputs.names)
    with pytest.raises(ValueError, match="captured for input shape"):
        session.prepare(model.make_feeds(batch=2)[0])


def test_tensorrt_engines_build_run_match_and_are_cached(tiny, gpu_hw, tmp_path):
    pytest.importorskip("tensorrt", reason="TensorRT not installed (pip install planner[tensorrt])")
    plugin = TensorRTPlugin()
    assert plugin.check(gpu_hw, tiny) == []
    logs: list[str] = []
    ctx = PlanContext(hw=gpu_hw, model=tiny, workdir=tmp_path, log=logs.append)
    specs = list(plugin.candidates(ctx))
    assert [s.config["variant"] for s in specs] == ["fp32", "fp16", "int8"]
    assert all(s.config["profile"] == {"min": 1, "opt": 1, "max": 32} for s in specs)
    for spec in specs:
        _assert_matches_fp32(plugin, spec, tiny)
    logs.clear()
    again = list(plugin.candidates(ctx))
    assert [s.artifacts for s in again] == [s.artifacts for s in specs]
    assert sum("reusing cached" in line for line in logs) == 3


def test_tensorrt_text_engines_take_both_int64_inputs(text, gpu_hw, tmp_path):
    pytest.importorskip("tensorrt", reason="TensorRT not installed (pip install planner[tensorrt])")
    plugin = TensorRTPlugin()
    assert plugin.check(gpu_hw, text) == []
    ctx = PlanContext(hw=gpu_hw, model=text, workdir=tmp_path, quick=True)
    specs = list(plugin.candidates(ctx))
    assert [s.config["variant"] for s in specs] == ["fp32", "fp16"]
    assert all(any("sequence length fixed at 64" in n for n in s.notes) for s in specs)
    for spec in specs:
        _assert_matches_fp32(plugin, spec, text)


@pytest.mark.parametrize("plugin_cls", [Fp16Plugin, TorchCompilePlugin, CudaGraphsPlugin,
                                        BatchingPlugin, TensorRTPlugin], ids=lambda p: p.name)
def test_the_measure_worker_times_each_first_candidate(plugin_cls, tiny, gpu_hw, tmp_path, monkeypatch):
    import planner.plugins
    from planner.measure.evaluate import MeasureJob, run_job
    from planner.measure.sweep import batch_sizes
    from planner.measure.timer import CUDA_EVENTS

    if plugin_cls is TensorRTPlugin:
        pytest.importorskip("tensorrt", reason="TensorRT not installed")
    plugin = plugin_cls()
    # Entry points are registered by the package metadata; look the plugin up directly here.
    monkeypatch.setattr(planner.plugins, "get_plugin", lambda name: plugin)
    ctx = PlanContext(hw=gpu_hw, model=tiny, workdir=tmp_path, quick=True)
    spec = next(iter(plugin.candidates(ctx)))
    result = run_job(MeasureJob(model=ModelRef.of(tiny), spec=spec, quick=True,
                                sweep_max_batch=4, fidelity_batches=2))
    p50 = result["timing"].stats.p50_ms
    assert p50 > 0
    assert result["cuda_peak_bytes"]
    assert result["info"]["timer"] == CUDA_EVENTS
    points = result["sweep"].points
    if spec.dynamic_batch:
        # Swept: one point per batch size (no memory budget here, and tiny fits every batch).
        assert [p.batch for p in points] == batch_sizes(4)
    else:
        # Fixed shape (CUDA graphs, fixed batches): the main timing is the only point, and it
        # counts every row one call processes.
        rows = spec.rows_per_call or tiny.inputs.batch
        assert [p.batch for p in points] == [rows]
        assert points[0].samples_per_s == pytest.approx(rows * 1e3 / p50)
