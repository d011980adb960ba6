"""cpu.onnxruntime: the shared export, the options grid, sessions that compute the torch function."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from cpu_plugin_helpers import fake_hw, torch_output

from planner.codec import from_data, to_data
from planner.onnx.export import ExportError
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Precision, get_plugin
from targets.cpu.onnxruntime import OnnxRuntimePlugin


@pytest.fixture(scope="module")
def onnxruntime_specs(shared_ctx):
    """The full candidate list for demo:tiny on the fake 2-core CPU."""
    return list(OnnxRuntimePlugin().candidates(shared_ctx))


def test_registered_under_its_entry_point() -> None:
    assert isinstance(get_plugin("cpu.onnxruntime"), OnnxRuntimePlugin)


def test_candidates_round_trip_and_cover_the_grid(onnxruntime_specs) -> None:
    labels = [s.label for s in onnxruntime_specs]
    assert len(set(labels)) == len(labels)
    for spec in onnxruntime_specs:
        assert from_data(to_data(spec), CandidateSpec) == spec
        assert spec.precision is Precision.FP32
        # Only the static-shape variant gives up the batch sweep: its session runs the measured shape alone.
        assert spec.dynamic_batch is not bool(spec.config.get("free_dimensions"))
        assert spec.artifacts["onnx"].endswith(".onnx")
    assert [s.label for s in onnxruntime_specs].count("onnxruntime defaults") == 1
    configs = [s.config for s in onnxruntime_specs if not s.config.get("defaults")]
    assert {c["graph_optimization_level"] for c in configs} == {
        "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"}
    assert {c["execution_mode"] for c in configs} == {"ORT_SEQUENTIAL", "ORT_PARALLEL"}
    assert {c["intra_op_threads"] for c in configs} == {1, 2}


def test_quick_mode_keeps_the_plain_static_shape(shared_ctx) -> None:
    """A quick plan keeps the plain configuration's static-shape variant: on a sub-millisecond model the plain
    precision with a fixed shape can be the fastest, and a search that never generates it cannot find it."""
    quick = list(OnnxRuntimePlugin().candidates(dataclasses.replace(shared_ctx, quick=True)))
    assert [s.label for s in quick] == ["onnxruntime all seq 2t", "onnxruntime all seq 2t static shape",
                                        "onnxruntime defaults"]


def test_the_static_shape_variant_fixes_the_batch_and_runs_only_that_shape(tiny, onnxruntime_specs) -> None:
    """The batch axis is fixed at the measured batch (1 for demo:tiny): the session computes the torch function at
    it, says so in its notes and its settings read back, and refuses another batch instead of running it slowly."""
    [static] = [s for s in onnxruntime_specs if s.config.get("free_dimensions")]
    plain = next(s for s in onnxruntime_specs if s.label == "onnxruntime all seq 2t")
    assert static.label == "onnxruntime all seq 2t static shape" and not static.dynamic_batch
    assert {k: v for k, v in static.config.items() if k != "free_dimensions"} == plain.config
    assert list(static.config["free_dimensions"].values()) == [tiny.inputs.batch]
    assert any("input shape fixed" in n for n in static.notes)
    session = OnnxRuntimePlugin().open(static, ModelRef.of(tiny))
    feed = tiny.make_feeds(seed=8)[0]
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(feed))), torch_output(tiny, feed),
                               rtol=1e-4, atol=1e-5)
    assert session.info()["fixed_shapes"] == f"x {[tiny.inputs.batch, 3, 32, 32]}"
    with pytest.raises(Exception, match="invalid dimensions"):
        session.run(session.prepare(tiny.make_feeds(batch=tiny.inputs.batch + 3, seed=8)[0]))


def test_a_graph_without_a_free_batch_gets_no_static_variant(tiny, tmp_path, shared_ctx, monkeypatch) -> None:
    """Where the export already fixed the batch there is nothing to fix: no duplicate under another name."""
    from targets.cpu import onnxruntime as plugin_module

    monkeypatch.setattr(plugin_module, "fixed_dimensions", lambda path, inputs: {})
    specs = list(OnnxRuntimePlugin().candidates(shared_ctx))
    assert specs and not any("static" in s.label for s in specs)


def test_plugins_share_one_export(shared_ctx, onnxruntime_specs) -> None:
    from planner.onnx.export import shared_onnx

    assert {s.artifacts["onnx"] for s in onnxruntime_specs} == {str(shared_onnx(shared_ctx).path)}


def test_sessions_match_torch_and_report_their_options(tiny, onnxruntime_specs) -> None:
    plugin = OnnxRuntimePlugin()
    for spec in onnxruntime_specs:
        session = plugin.open(spec, ModelRef.of(tiny))
        for batch in ((1, 4) if spec.dynamic_batch else (tiny.inputs.batch,)):
            feed = tiny.make_feeds(batch=batch, seed=8)[0]
            got = session.to_numpy(session.run(session.prepare(feed)))
            np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=1e-4, atol=1e-5)
        info = session.info()
        if spec.config.get("defaults"):
            assert info["allow_spinning"] == "default" and info["intra_op_threads"] == 0
            continue
        assert info["intra_op_threads"] == spec.config["intra_op_threads"]
        assert info["inter_op_threads"] == spec.config["inter_op_threads"]
        assert info["graph_optimization_level"] == spec.config["graph_optimization_level"]
        assert info["execution_mode"] == spec.config["execution_mode"]
        assert info["allow_spinning"] == ("1" if spec.config["allow_spinning"] else "0")
        assert info["providers"] == ["CPUExecutionProvider"]
        assert info["runtime"].startswith("onnxruntime ")


def test_onnx_source_model_uses_its_own_file(tiny, tiny_onnx, tmp_path) -> None:
    ctx = PlanContext(hw=fake_hw(), model=tiny_onnx, workdir=tmp_path, quick=True)
    plugin = OnnxRuntimePlugin()
    assert plugin.check(ctx.hw, tiny_onnx) == []
    specs = list(plugin.candidates(ctx))
    assert {s.artifacts["onnx"] for s in specs} == {str(tiny_onnx.onnx_path)}
    assert not list(tmp_path.iterdir()), "an ONNX model needs no export"
    session = plugin.open(specs[0], ModelRef.of(tiny_onnx))
    feed = tiny.make_feeds(seed=9)[0]
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(feed))),
                               torch_output(tiny, feed), rtol=1e-4, atol=1e-5)


def test_export_failure_is_the_reason(tiny, tmp_path) -> None:
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path)
    ctx.shared["onnx"] = ExportError("ONNX export failed: unsupported op aten::xyz")
    with pytest.raises(ExportError, match="unsupported op aten::xyz"):
        list(OnnxRuntimePlugin().candidates(ctx))


def test_check_reports_a_missing_package(tiny, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    reasons = OnnxRuntimePlugin().check(fake_hw(), tiny)
    assert reasons == ["onnxruntime not installed (pip install onnxruntime)"]


def test_check_needs_onnx_to_export_a_torch_model(tiny, tiny_onnx, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnx" else real(name, *a))
    assert any("onnx not installed" in r for r in OnnxRuntimePlugin().check(fake_hw(), tiny))
    assert OnnxRuntimePlugin().check(fake_hw(), tiny_onnx) == []


def test_single_core_collapses_the_thread_sweep(tiny, tmp_path, shared_ctx) -> None:
    ctx = dataclasses.replace(shared_ctx, hw=fake_hw(usable=1, physical=1, logical=1))
    specs = list(OnnxRuntimePlugin().candidates(ctx))
    assert {s.config["intra_op_threads"] for s in specs if not s.config.get("defaults")} == {1}
    assert len({s.label for s in specs}) == len(specs)


def test_text_model_sessions_take_both_int64_inputs(text, text_ctx) -> None:
    """demo:text (input_ids, attention_mask; int64): every quick candidate feeds both, at any batch."""
    plugin = OnnxRuntimePlugin()
    assert plugin.check(text_ctx.hw, text) == []
    specs = list(plugin.candidates(text_ctx))
    assert specs and all(s.dynamic_batch for s in specs if not s.config.get("free_dimensions"))
    for spec in specs:
        session = plugin.open(spec, ModelRef.of(text))
        assert session.info()["inputs"] == "input_ids, attention_mask"
        for batch in ((1, 3) if spec.dynamic_batch else (text.inputs.batch,)):
            feed = text.make_feeds(batch=batch, seed=21)[0]
            prepared = session.prepare(feed)
            assert list(prepared) == ["input_ids", "attention_mask"]
            assert all(a.dtype == np.int64 for a in prepared.values())
            got = session.to_numpy(session.run(prepared))
            assert got.shape == (batch, 4)
            np.testing.assert_allclose(got, torch_output(text, feed), rtol=1e-4, atol=1e-5)


def test_text_model_as_an_onnx_file(text, text_ctx, tmp_path) -> None:
    """The exported text model planned as an ONNX-only model: its inputs come from the graph."""
    from planner.models import load_model
    from planner.onnx.export import shared_onnx

    onnx_text = load_model(str(shared_onnx(text_ctx).path))
    assert onnx_text.inputs.names == ("input_ids", "attention_mask")
    ctx = PlanContext(hw=fake_hw(), model=onnx_text, workdir=tmp_path, quick=True)
    spec = next(iter(OnnxRuntimePlugin().candidates(ctx)))
    session = OnnxRuntimePlugin().open(spec, ModelRef.of(onnx_text))
    feed = onnx_text.make_feeds(batch=2, seed=22)[0]  # its own sequence length, settled from the graph
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(feed))),
                               torch_output(text, feed), rtol=1e-4, atol=1e-5)
