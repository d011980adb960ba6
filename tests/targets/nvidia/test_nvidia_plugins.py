"""NVIDIA plugins without a GPU: clear reasons from check(), candidate specs, TensorRT helpers."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import numpy as np
import pytest

from planner.models.loaded import make_feeds
from planner.models.spec import ModelInputs, TensorSpec
from planner.onnx.fp16 import fp16_onnx
from planner.plugins import MESSAGES, CandidateSpec, ModelRef, PlanContext, Plugin, Precision, Target
from targets.nvidia import common
from targets.nvidia.batching import BatchingPlugin, FixedBatchSession, feed_rows, tile_feed
from targets.nvidia.cuda_graphs import CudaGraphsPlugin, captured_batch, shape_mismatch
from targets.nvidia.fp16 import Fp16Plugin
from targets.nvidia.tensorrt import (
    INSTALL_HINT,
    TRT_TO_TORCH_DTYPE,
    EngineBuildError,
    TensorRTPlugin,
    batch_profile,
    engine_file_name,
    input_profiles,
    inputs_key,
    onnx_sha256,
    profile_shapes,
    workspace_bytes,
)
from targets.nvidia.torch_compile import TorchCompilePlugin

PLUGINS = (BatchingPlugin, Fp16Plugin, TorchCompilePlugin, TensorRTPlugin, CudaGraphsPlugin)
NO_CUDA = MESSAGES["cuda_unavailable"]
NO_GPU = "no NVIDIA GPU detected"


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _ctx(model, hw, tmp_path: Path, *, quick: bool = False) -> PlanContext:
    return PlanContext(hw=hw, model=model, workdir=tmp_path, quick=quick)


def _torch_output(model, feed: dict[str, np.ndarray]) -> np.ndarray:
    """The loaded torch module on one feed (its arrays as positional arguments), as float32 numpy."""
    import torch

    with torch.inference_mode():
        return model.module(*(torch.from_numpy(a) for a in feed.values())).float().numpy()


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_names_and_targets_are_the_registered_ones():
    names = {p.name for p in PLUGINS}
    assert names == {"nvidia.batching", "nvidia.fp16", "nvidia.torch_compile", "nvidia.tensorrt",
                     "nvidia.cuda_graphs"}
    assert all(p.target is Target.NVIDIA and p.summary for p in PLUGINS)


@pytest.mark.skipif(_cuda_available(), reason="asserts the reasons given on a machine without CUDA")
@pytest.mark.parametrize("plugin_cls", PLUGINS, ids=lambda p: p.name)
def test_check_says_why_without_a_gpu(plugin_cls, tiny, hw_without_gpu):
    reasons = plugin_cls().check(hw_without_gpu, tiny)
    assert NO_CUDA in reasons
    assert any(r.startswith(NO_GPU) for r in reasons)


@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="TensorRT is installed")
def test_tensorrt_check_names_the_missing_package(tiny, hw_with_gpu):
    reasons = TensorRTPlugin().check(hw_with_gpu(), tiny)
    assert INSTALL_HINT in reasons
    assert INSTALL_HINT == ("TensorRT not installed (pip install planner[tensorrt] on a machine "
                            "with NVIDIA's index)")


def test_cuda_reasons_when_the_profile_has_a_gpu_but_torch_cannot_reach_it(monkeypatch, hw_with_gpu, tiny):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    reasons = Fp16Plugin().check(hw_with_gpu(), tiny)
    if torch.version.cuda is None:
        assert reasons == [MESSAGES["torch_cpu_only"].format(version=torch.__version__)]
        assert "CPU-only build" in reasons[0]
    else:
        assert reasons == [NO_CUDA]


def test_cuda_reasons_trust_torch_when_nvml_missed_the_gpu(monkeypatch, hw_without_gpu, tiny):
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert Fp16Plugin().check(hw_without_gpu, tiny) == []


def test_without_torch_the_profile_decides_and_torch_is_named_once(monkeypatch, hw_without_gpu, hw_with_gpu, tiny):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    reasons = CudaGraphsPlugin().check(hw_without_gpu, tiny)
    assert reasons == ["torch not installed (pip install torch)", MESSAGES["no_gpu_in_profile"]]
    assert CudaGraphsPlugin().check(hw_with_gpu(), tiny) == ["torch not installed (pip install torch)"]


def test_torch_plugins_reject_an_onnx_only_model(hw_with_gpu):
    onnx_only = types.SimpleNamespace(has_torch=False, scripted=False, onnx_path=Path("m.onnx"),
                                      inputs=ModelInputs.single((1, 3, 32, 32)))
    for plugin_cls in (BatchingPlugin, Fp16Plugin, TorchCompilePlugin, CudaGraphsPlugin):
        reasons = plugin_cls().check(hw_with_gpu(), onnx_only)
        assert MESSAGES["no_torch_module"].format(plugin=plugin_cls.name) in reasons
    assert not any("ONNX-only" in r for r in TensorRTPlugin().check(hw_with_gpu(), onnx_only))


def test_nvidia_plugins_declare_their_needs_instead_of_checking_by_hand():
    for plugin_cls in PLUGINS:
        assert plugin_cls.needs_cuda
    # Only batching (a fixed-batch model cannot take larger batches) and torch.compile (no Triton compile
    # worker fits in the memory beside its worker) have reasons of their own.
    assert [p.name for p in PLUGINS if p.check is not Plugin.check] == ["nvidia.batching", "nvidia.torch_compile"]
    assert TensorRTPlugin.needs_onnx and not TensorRTPlugin.needs_torch_module


def test_batching_refuses_a_fixed_batch_model_besides_the_base_reasons(hw_without_gpu):
    # The mask's dimension 0 is not a batch axis, so the model as a whole cannot take larger batches.
    inputs = ModelInputs((TensorSpec(name="input_ids", shape=(1, 8), dtype="int64"),
                          TensorSpec(name="mask", shape=(1, 8), dtype="int64", axes=("", "sequence"))))
    fixed = types.SimpleNamespace(has_torch=False, onnx_path=Path("m.onnx"), inputs=inputs)
    reasons = BatchingPlugin().check(hw_without_gpu, fixed)
    assert reasons[-1] == ("the model's batch size is fixed: it cannot take larger batches "
                           "(input_ids int64 [batch=1, sequence=8]; mask int64 [1, sequence=8])")
    assert MESSAGES["no_torch_module"].format(plugin="nvidia.batching") in reasons


def test_bf16_needs_compute_capability_8(hw_with_gpu):
    assert common.supports_bf16(hw_with_gpu((8, 0)))
    assert common.supports_bf16(hw_with_gpu((9, 0)))
    assert not common.supports_bf16(hw_with_gpu((7, 5)))


def test_fp16_candidates(tiny, hw_with_gpu, tmp_path):
    ampere = list(Fp16Plugin().candidates(_ctx(tiny, hw_with_gpu((8, 6)), tmp_path)))
    assert [(s.precision, s.config["channels_last"]) for s in ampere] == [
        (Precision.FP16, False), (Precision.FP16, True), (Precision.BF16, False)]
    turing = list(Fp16Plugin().candidates(_ctx(tiny, hw_with_gpu((7, 5)), tmp_path)))
    assert Precision.BF16 not in {s.precision for s in turing}


def test_fp16_offers_no_channels_last_to_a_text_model(text, hw_with_gpu, tmp_path):
    logs: list[str] = []
    ctx = PlanContext(hw=hw_with_gpu((8, 6)), model=text, workdir=tmp_path, log=logs.append)
    specs = list(Fp16Plugin().candidates(ctx))
    assert [(s.precision, s.config["channels_last"]) for s in specs] == [
        (Precision.FP16, False), (Precision.BF16, False)]
    assert any("not a 4-D float image (input_ids int64" in line for line in logs)
    assert any("integer inputs such as token ids stay integers" in n for n in specs[0].notes)


def test_torch_compile_modes_depend_on_quick(tiny, hw_with_gpu, tmp_path):
    plugin = TorchCompilePlugin()
    quick = list(plugin.candidates(_ctx(tiny, hw_with_gpu(), tmp_path, quick=True)))
    full = list(plugin.candidates(_ctx(tiny, hw_with_gpu(), tmp_path)))
    assert {s.config["compile_mode"] for s in quick} == {"default", "reduce-overhead"}
    assert {s.config["compile_mode"] for s in full} == {"default", "reduce-overhead", "max-autotune"}
    assert {s.precision for s in full} == {Precision.FP32, Precision.FP16}
    assert len(full) == 6


def test_cuda_graph_spec_is_static_fp16(tiny, text, hw_with_gpu, tmp_path):
    (spec,) = CudaGraphsPlugin().candidates(_ctx(tiny, hw_with_gpu(), tmp_path))
    assert spec.precision is Precision.FP16
    assert spec.dynamic_batch is False
    assert spec.config["batch"] == 1 and spec.config["shapes"] == {"x": [1, 3, 32, 32]}
    (text_spec,) = CudaGraphsPlugin().candidates(_ctx(text, hw_with_gpu(), tmp_path))
    assert text_spec.config["shapes"] == {"input_ids": [1, 64], "attention_mask": [1, 64]}
    assert captured_batch(text_spec, text.inputs) == 1


def test_cuda_graph_batch_reads_older_specs_too(tiny):
    old = CandidateSpec(plugin="nvidia.cuda_graphs", config={"device": "cuda", "shape": [4, 3, 32, 32]},
                        dynamic_batch=False)
    assert captured_batch(old, tiny.inputs) == 4
    assert captured_batch(CandidateSpec(plugin="nvidia.cuda_graphs", dynamic_batch=False), tiny.inputs) == 1


def test_cuda_graph_feeds_must_have_every_captured_shape(text):
    captured = {t.name: t.shape for t in text.inputs.tensors}
    assert shape_mismatch(captured, text.make_feeds(seed=1)[0]) is None
    longer = text.make_feeds(batch=2)[0]
    assert "captured for input shape (1, 64) of 'input_ids'; got (2, 64)" in shape_mismatch(captured, longer)
    shorter = make_feeds(text.inputs.with_sequence(16))[0]
    assert "(1, 64) of 'input_ids'; got (1, 16)" in shape_mismatch(captured, shorter)
    one = {"input_ids": longer["input_ids"]}
    assert shape_mismatch(captured, one) == "this CUDA graph was captured for 2 inputs; got 1"


def test_batching_specs_are_fixed_batches(tiny, hw_with_gpu, tmp_path):
    specs = list(BatchingPlugin().candidates(_ctx(tiny, hw_with_gpu(), tmp_path)))
    assert [s.config["batch"] for s in specs] == [8, 32]
    assert all(not s.dynamic_batch and s.precision is Precision.FP32 for s in specs)
    assert all("per call of" in s.notes[0] for s in specs)


def test_fixed_batch_session_tiles_and_returns_the_original_rows(tiny):
    import copy

    import torch

    session = FixedBatchSession(copy.deepcopy(tiny.module), batch=8, device="cpu")
    feed = tiny.make_feeds(batch=3, seed=5)[0]
    (prepared,) = session.prepare(feed)
    assert tuple(prepared.shape) == (8, 3, 32, 32)
    out = session.to_numpy(session.run((prepared,)))
    with torch.inference_mode():
        ref = tiny.module(torch.from_numpy(feed["x"])).numpy()
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="an input of 9 samples does not fit a fixed batch of 8"):
        session.prepare(tiny.make_feeds(batch=9)[0])


def test_fixed_batch_session_tiles_every_input_of_a_text_model(text):
    import copy

    import torch

    session = FixedBatchSession(copy.deepcopy(text.module), batch=8, device="cpu")
    feed = text.make_feeds(batch=3, seed=6)[0]
    feed["attention_mask"][1, 50:] = 0  # a padded row: the mask must travel with its own token ids
    ids, mask = session.prepare(feed)
    assert [(t.dtype, tuple(t.shape)) for t in (ids, mask)] == [(torch.int64, (8, 64))] * 2
    rows = np.arange(8) % 3
    np.testing.assert_array_equal(ids.numpy(), feed["input_ids"][rows])
    np.testing.assert_array_equal(mask.numpy(), feed["attention_mask"][rows])
    out = session.to_numpy(session.run((ids, mask)))
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out, _torch_output(text, feed), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="an input of 9 samples does not fit a fixed batch of 8"):
        session.prepare(text.make_feeds(batch=9)[0])
    uneven = {"input_ids": feed["input_ids"], "attention_mask": feed["attention_mask"][:2]}
    with pytest.raises(ValueError, match="disagree on the batch size"):
        session.prepare(uneven)


def test_tile_feed_repeats_rows_and_keeps_scalars():
    feed = {"a": np.arange(6).reshape(3, 2), "scale": np.array(2.0)}
    assert feed_rows(feed) == 3
    tiled = tile_feed(feed, 5)
    np.testing.assert_array_equal(tiled["a"][:, 0], [0, 2, 4, 0, 2])
    assert tiled["scale"].shape == ()


def test_specs_round_trip_through_json(tiny, hw_with_gpu, tmp_path):
    ctx = _ctx(tiny, hw_with_gpu(), tmp_path)
    specs = [s for cls in (BatchingPlugin, Fp16Plugin, TorchCompilePlugin, CudaGraphsPlugin)
             for s in cls().candidates(ctx)]
    assert specs
    for spec in specs:
        assert CandidateSpec.from_text(spec.to_text()) == spec


def test_batch_profile_and_profile_shapes():
    assert batch_profile(1, dynamic=True) == (1, 1, 32)
    assert batch_profile(64, dynamic=True) == (1, 64, 64)
    assert batch_profile(4, dynamic=False) == (4, 4, 4)
    assert profile_shapes((-1, 3, 32, 32), (1, 3, 32, 32), (1, 4, 32)) == (
        (1, 3, 32, 32), (4, 3, 32, 32), (32, 3, 32, 32))
    # A dynamic non-batch axis (sequence length) takes the model's own size.
    assert profile_shapes((-1, -1), (2, 128), (1, 2, 32))[2] == (32, 128)
    assert profile_shapes((4, 3), (4, 3), (4, 4, 4)) == ((4, 3),) * 3
    # An input without a batch axis keeps its own dimension 0 even in a dynamic profile.
    assert profile_shapes((-1, 8), (2, 8), (1, 4, 32), batch_axis=False) == ((2, 8),) * 3


def test_input_profiles_cover_every_input_by_name(text):
    inputs = text.inputs.with_batch(2)
    network = [("attention_mask", (-1, -1)), ("input_ids", (-1, -1))]
    profiles = input_profiles(network, inputs, batch_profile(2, dynamic=True))
    # Only the batch spans the profile; the sequence stays at the model's 64 tokens.
    assert profiles == {name: ((1, 64), (2, 64), (32, 64)) for name in ("attention_mask", "input_ids")}
    assert list(profiles) == ["attention_mask", "input_ids"]
    static = input_profiles([("ids", (2, -1)), ("mask", (2, -1))], inputs, batch_profile(2, dynamic=False))
    assert static == {"ids": ((2, 64),) * 3, "mask": ((2, 64),) * 3}  # renamed: paired by position
    with pytest.raises(EngineBuildError, match="neither their names nor their number agree"):
        input_profiles([("ids", (-1, -1))], inputs, (1, 2, 32))
    with pytest.raises(EngineBuildError, match="input 'input_ids': the network input has 3 dimensions"):
        input_profiles([("input_ids", (-1, -1, 8)), ("attention_mask", (-1, -1))], inputs, (1, 2, 32))


def test_inputs_key_changes_with_shape_but_not_batch(text, tiny):
    key = inputs_key(text.inputs)
    assert len(key) == 8
    assert inputs_key(text.inputs.with_batch(8)) == key
    assert inputs_key(text.inputs.with_sequence(128)) != key
    assert inputs_key(tiny.inputs) != key


def test_engine_cache_key_changes_with_gpu_version_and_onnx(tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(b"graph one")
    b.write_bytes(b"graph two")
    def key(gpu="NVIDIA H100 80GB HBM3", version="11.0.0", onnx=a, profile=(1, 1, 32), shapes="0a1b2c3d") -> str:
        return engine_file_name("fp16", gpu, version, onnx_sha256(onnx), profile, shapes=shapes)

    base = key()
    assert base.endswith("-s0a1b2c3d.engine") and " " not in base
    assert base == key()
    assert len({base, key(gpu="NVIDIA A10G"), key(version="11.1.0"), key(onnx=b),
                key(profile=(1, 8, 32)), key(shapes="ffffffff")}) == 6
    (tmp_path / "a.onnx.data").write_bytes(b"weights")
    assert onnx_sha256(a) != onnx_sha256(b) and len(onnx_sha256(a)) == 64


def test_workspace_is_a_quarter_of_the_gpu_capped_at_4_gib(hw_with_gpu):
    assert workspace_bytes(hw_with_gpu(memory=8 << 30)) == 2 << 30
    assert workspace_bytes(hw_with_gpu(memory=80 << 30)) == 4 << 30


def test_dtype_table_names_real_torch_dtypes():
    import torch

    assert all(isinstance(getattr(torch, name), torch.dtype) for name in TRT_TO_TORCH_DTYPE.values())


def test_fp16_onnx_is_valid_fp16_and_close_to_fp32(tiny, tmp_path):
    import onnx
    import onnxruntime as ort

    from planner.onnx.export import export_onnx

    src = export_onnx(tiny, tmp_path / "tiny.onnx").path
    dst = fp16_onnx(src, tmp_path / "tiny.fp16.onnx")
    onnx.checker.check_model(str(dst))  # also checks topological order
    proto = onnx.load(str(dst))
    float_inits = [i for i in proto.graph.initializer
                   if i.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)]
    assert float_inits and all(i.data_type == onnx.TensorProto.FLOAT16 for i in float_inits)
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    fp32 = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    fp16 = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    for feed in tiny.make_feeds(batch=4, count=2, seed=11):
        ref = fp32.run(None, feed)[0]
        got = fp16.run(None, feed)[0]
        assert got.dtype == np.float32
        assert _cosine(got, ref) > 0.999


def test_tensorrt_qdq_file_is_symmetric_with_float_weights_and_biases(tiny, tmp_path):
    import onnx
    import onnxruntime as ort
    import torch
    from onnx import numpy_helper

    from planner.onnx.export import export_onnx
    from planner.onnx.quantize import quantize_qdq

    src = export_onnx(tiny, tmp_path / "tiny.onnx")
    dst = quantize_qdq(src.path, tmp_path / "tiny.qdq.onnx", tiny.make_feeds(count=8, seed=3),
                       for_tensorrt=True)
    proto = onnx.load(str(dst))
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    qdq = [n for n in proto.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    assert qdq
    for node in qdq:
        # TensorRT's explicit quantization takes only zero point 0, and int8 (never int32) data.
        if len(node.input) > 2:
            assert not inits[node.input[2]].any()
            assert inits[node.input[2]].dtype == np.int8
        if node.op_type == "DequantizeLinear" and node.input[0] in inits:
            assert inits[node.input[0]].dtype != np.int32
    conv_weights = [n.input[1] for n in proto.graph.node if n.op_type == "Conv"]
    producers = {o: n for n in proto.graph.node for o in n.output}
    for name in conv_weights:
        dq = producers[name]
        assert dq.op_type == "DequantizeLinear"
        assert producers[dq.input[0]].op_type == "QuantizeLinear"  # fp32 weight behind a Q/DQ pair
    # Unoptimized, ORT runs Q and DQ as float ops: this measures the quantization itself, not
    # this CPU's INT8 kernels (which, without VNNI, saturate on full-range symmetric weights).
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(dst), opts, providers=["CPUExecutionProvider"])
    feed = tiny.make_feeds(batch=4, seed=1000)[0]
    with torch.inference_mode():
        ref = tiny.module(torch.from_numpy(feed["x"])).numpy()
    assert _cosine(session.run(None, feed)[0], ref) > 0.99


@pytest.mark.parametrize("model_name", ["tiny", "text"])
def test_fixed_batch_throughput_counts_every_row_of_a_call(model_name, request):
    """The worker's single point for nvidia.batching is rows per call x calls per second.

    Run on the CPU (the plugin's session takes a device): each call processes 8 rows although
    the worker feeds the model's own batch of 1, so samples/s must be 8x the call rate. The text
    model has two inputs, both padded to 8 rows.
    """
    import dataclasses

    from planner.measure.evaluate import MeasureJob, run_job
    from planner.measure.timer import HOST_CLOCK
    from targets.nvidia.batching import batch_spec

    model = request.getfixturevalue(model_name)
    spec = batch_spec(8)
    assert spec.rows_per_call == 8
    spec = dataclasses.replace(spec, config={**spec.config, "device": "cpu"})
    assert model.inputs.batch == 1
    result = run_job(MeasureJob(model=ModelRef.of(model), spec=spec, quick=True,
                                sweep_max_batch=4, fidelity_batches=2))
    p50 = result["timing"].stats.p50_ms
    (point,) = result["sweep"].points
    assert point.batch == 8
    assert point.samples_per_s == pytest.approx(8 * 1e3 / p50)
    assert result["info"]["batch_per_call"] == 8
    assert result["info"]["timer"] == HOST_CLOCK
    assert [o.shape[0] for o in result["outputs"]] == [1, 1]  # the original rows' outputs only
