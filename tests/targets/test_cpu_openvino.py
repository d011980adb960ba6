"""cpu.openvino: explicit f32, bf16 only where native, read-back properties, dynamic batch."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from cpu_plugin_helpers import fake_hw, torch_output

from planner.codec import from_data, to_data
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Precision, get_plugin
from targets.cpu.openvino import OpenVinoPlugin


def _cpu_has_native_bf16() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@pytest.fixture(scope="module")
def openvino_specs(shared_ctx):
    """The full candidate list for demo:tiny on the fake 2-core CPU without bf16."""
    return list(OpenVinoPlugin().candidates(shared_ctx))


def test_registered_under_its_entry_point() -> None:
    assert isinstance(get_plugin("cpu.openvino"), OpenVinoPlugin)


def test_candidates_round_trip(openvino_specs) -> None:
    assert [s.label for s in openvino_specs] == ["openvino f32 latency 2t", "openvino f32 latency 2t static",
                                                 "openvino f32 throughput 2t"]
    for spec in openvino_specs:
        assert from_data(to_data(spec), CandidateSpec) == spec
        assert spec.precision is Precision.FP32
    throughput = next(s for s in openvino_specs if s.config["hint"] == "THROUGHPUT")
    assert any("batch serving" in n for n in throughput.notes)
    static = next(s for s in openvino_specs if s.config["static_shape"])
    assert not static.dynamic_batch


def test_bf16_candidates_only_with_native_bf16(shared_ctx) -> None:
    for feature in ("avx512_bf16", "amx_bf16"):
        ctx = dataclasses.replace(shared_ctx, hw=fake_hw(features=("avx2", feature)))
        specs = list(OpenVinoPlugin().candidates(ctx))
        bf16 = [s for s in specs if s.precision is Precision.BF16]
        assert {s.config["hint"] for s in bf16} == {"LATENCY", "THROUGHPUT"}
        assert any(s.config["static_shape"] for s in bf16)
        # f32 stays a candidate of its own, pinned explicitly (bf16 is the default there).
        assert any(s.precision is Precision.FP32 for s in specs)
        quick = list(OpenVinoPlugin().candidates(dataclasses.replace(ctx, quick=True)))
        assert len(quick) <= 4
        assert any(s.config["static_shape"] and s.precision is Precision.BF16 for s in quick)
        # The plain precision keeps its fixed-shape compile in a quick plan too.
        assert any(s.config["static_shape"] and s.precision is Precision.FP32 for s in quick)
        assert {s.precision for s in quick} == {Precision.FP32, Precision.BF16}


def test_quick_mode_keeps_it_small(shared_ctx) -> None:
    quick = list(OpenVinoPlugin().candidates(dataclasses.replace(shared_ctx, quick=True)))
    assert 1 <= len(quick) <= 4


def test_f32_sessions_match_torch_and_report_real_properties(tiny, openvino_specs) -> None:
    plugin = OpenVinoPlugin()
    for spec in openvino_specs:
        session = plugin.open(spec, ModelRef.of(tiny))
        batches = (1, 4) if spec.dynamic_batch else (1,)
        for batch in batches:
            feed = tiny.make_feeds(batch=batch, seed=12)[0]
            got = session.to_numpy(session.run(session.prepare(feed)))
            np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=1e-4, atol=1e-5)
        info = session.info()
        assert info["INFERENCE_PRECISION_HINT"] == "f32"
        assert info["PERFORMANCE_HINT"] == spec.config["hint"]
        assert info["INFERENCE_NUM_THREADS"] == 2
        assert isinstance(info["NUM_STREAMS"], int) and info["NUM_STREAMS"] >= 1
        assert info["runtime"].startswith("openvino ")
        assert "note" not in info


def test_outputs_survive_the_next_inference(tiny, openvino_specs) -> None:
    session = OpenVinoPlugin().open(openvino_specs[0], ModelRef.of(tiny))
    a, b = tiny.make_feeds(count=2, seed=13)
    first = session.to_numpy(session.run(session.prepare(a)))
    session.run(session.prepare(b))
    np.testing.assert_allclose(first, torch_output(tiny, a), rtol=1e-4, atol=1e-5)


def test_bf16_request_reports_what_openvino_really_runs(tiny, shared_ctx) -> None:
    ctx = dataclasses.replace(shared_ctx, hw=fake_hw(features=("avx2", "avx512_bf16")))
    spec = next(s for s in OpenVinoPlugin().candidates(ctx)
                if s.precision is Precision.BF16 and s.config["hint"] == "LATENCY")
    session = OpenVinoPlugin().open(spec, ModelRef.of(tiny))
    info = session.info()
    feed = tiny.make_feeds(seed=14)[0]
    got = session.to_numpy(session.run(session.prepare(feed)))
    np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=5e-2, atol=5e-2)
    if _cpu_has_native_bf16():
        assert info["INFERENCE_PRECISION_HINT"] == "bf16"
    else:
        # Without native bf16 OpenVINO quietly keeps f32; info must say so, not echo the request.
        assert info["INFERENCE_PRECISION_HINT"] == "f32"
        assert "asked for bf16" in info["note"]


def test_onnx_source_model(tiny, tiny_onnx, tmp_path) -> None:
    ctx = PlanContext(hw=fake_hw(), model=tiny_onnx, workdir=tmp_path, quick=True)
    assert OpenVinoPlugin().check(ctx.hw, tiny_onnx) == []
    spec = next(iter(OpenVinoPlugin().candidates(ctx)))
    assert spec.artifacts["onnx"] == str(tiny_onnx.onnx_path)
    session = OpenVinoPlugin().open(spec, ModelRef.of(tiny_onnx))
    feed = tiny.make_feeds(seed=15)[0]
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(feed))),
                               torch_output(tiny, feed), rtol=1e-4, atol=1e-5)


def test_check_reports_a_missing_package(tiny, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real(name, *a))
    assert OpenVinoPlugin().check(fake_hw(), tiny) == ["openvino not installed (pip install openvino)"]


def test_text_model_compiles_every_input_at_its_shape(text, text_ctx) -> None:
    """demo:text: both int64 inputs reshaped by name; the batch stays open unless the candidate is static."""
    plugin = OpenVinoPlugin()
    assert plugin.check(text_ctx.hw, text) == []
    specs = list(plugin.candidates(dataclasses.replace(text_ctx, quick=False)))
    assert [s.label for s in specs] == ["openvino f32 latency 2t", "openvino f32 latency 2t static",
                                        "openvino f32 throughput 2t"]
    assert all(any("sequence length fixed at 64" in n for n in s.notes) for s in specs)
    for spec in specs:
        session = plugin.open(spec, ModelRef.of(text))
        batch_dim = "?" if spec.dynamic_batch else "1"
        assert session.info()["inputs"] == (f"input_ids [{batch_dim},64] i64, "
                                            f"attention_mask [{batch_dim},64] i64")
        for batch in (1, 3) if spec.dynamic_batch else (1,):
            feed = text.make_feeds(batch=batch, seed=23)[0]
            prepared = session.prepare(feed)
            assert [(k, a.data.dtype, tuple(a.shape)) for k, a in prepared.items()] == [
                (0, np.int64, (batch, 64)), (1, np.int64, (batch, 64))]
            got = session.to_numpy(session.run(prepared))
            assert got.shape == (batch, 4)
            np.testing.assert_allclose(got, torch_output(text, feed), rtol=1e-4, atol=1e-5)


def test_inputs_are_fed_by_name_whatever_the_feed_order(text, text_ctx) -> None:
    spec = next(iter(OpenVinoPlugin().candidates(text_ctx)))
    session = OpenVinoPlugin().open(spec, ModelRef.of(text))
    feed = text.make_feeds(seed=24)[0]
    feed["attention_mask"][:, 40:] = 0  # padding, so swapping the two inputs would change the output
    swapped = {"attention_mask": feed["attention_mask"], "input_ids": feed["input_ids"]}
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(swapped))),
                               torch_output(text, feed), rtol=1e-4, atol=1e-5)


def test_reshape_dims_pair_graph_inputs_by_name_else_by_position(text) -> None:
    from targets.cpu.openvino import reshape_dims

    inputs = text.inputs.with_batch(2)
    assert reshape_dims(["attention_mask", "input_ids"], inputs, dynamic_batch=True) == {
        "attention_mask": [-1, 64], "input_ids": [-1, 64]}
    # An exporter that renamed the inputs: paired by position, fully static when asked.
    assert reshape_dims(["ids", "mask"], inputs, dynamic_batch=False) == {"ids": [2, 64], "mask": [2, 64]}
    with pytest.raises(ValueError, match="neither their names nor their number agree"):
        reshape_dims(["ids"], inputs, dynamic_batch=True)


def test_onnx_text_model_runs_with_integer_inputs(text, text_ctx, tmp_path) -> None:
    from planner.models import load_model
    from planner.onnx.export import shared_onnx

    onnx_text = load_model(str(shared_onnx(text_ctx).path))
    ctx = PlanContext(hw=fake_hw(), model=onnx_text, workdir=tmp_path, quick=True)
    spec = next(iter(OpenVinoPlugin().candidates(ctx)))
    session = OpenVinoPlugin().open(spec, ModelRef.of(onnx_text))
    feed = onnx_text.make_feeds(batch=2, seed=25)[0]  # its own sequence length, settled from the graph
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(feed))),
                               torch_output(text, feed), rtol=1e-4, atol=1e-5)
