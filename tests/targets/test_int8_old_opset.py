"""The INT8 plugins on opset-11 files with Constant-node weights: every QDQ candidate builds, loads and runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from cpu_plugin_helpers import fake_hw
from trait_models import constant_weights_classifier, sequence_model

from planner.models import load_model
from planner.onnx.quantize import QuantizationError
from planner.plugins import ModelRef, PlanContext, Precision
from targets.cpu.openvino_int8 import OpenVinoInt8Plugin
from targets.edge.int8 import Int8Plugin

CONVERTED = "before quantizing: converted from opset 11 to 17"
BUILDERS = {"classifier": constant_weights_classifier, "sequence": sequence_model}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _reference(path, feed) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def old_file(request, tmp_path_factory):
    """(path, loaded model) of an opset-11 trait model written by hand the way paddle2onnx leaves it."""
    path = BUILDERS[request.param](tmp_path_factory.mktemp(request.param) / f"{request.param}11.onnx")
    return path, load_model(str(path))


def _ctx(model, workdir, **kw) -> PlanContext:
    logs: list[str] = []
    return PlanContext(hw=fake_hw(), model=model, workdir=workdir, quick=True, log=logs.append, **kw)


@pytest.fixture(scope="module")
def edge_specs(old_file, tmp_path_factory):
    """The edge INT8 plugin's candidates for the file, built once (calibrating and quantizing take seconds)."""
    _, model = old_file
    return list(Int8Plugin().candidates(_ctx(model, tmp_path_factory.mktemp("edge-int8"))))


def test_edge_int8_builds_both_candidates_from_the_converted_file(old_file, edge_specs):
    path, model = old_file
    specs = edge_specs
    assert [s.config["mode"] for s in specs] == ["static", "dynamic"]
    feed = model.make_feeds(batch=2, seed=5)[0]
    for spec in specs:
        assert any(n.startswith(CONVERTED) and "moved from Constant nodes" in n for n in spec.notes)
        quantized = onnx.load(spec.artifacts["onnx"])
        assert [o.version for o in quantized.opset_import if o.domain == ""] == [17]
        session = Int8Plugin().open(spec, ModelRef.of(model))
        got = session.to_numpy(session.run(session.prepare(feed)))
        assert _cosine(got, _reference(path, feed)) > 0.99, spec.label
    static = onnx.load(specs[0].artifacts["onnx"])
    per_channel = [n for n in static.graph.node
                   if n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)]
    assert per_channel  # per-channel weights: the reason the opset had to change


def test_openvino_reads_and_runs_the_qdq_file(old_file, tmp_path):
    path, model = old_file
    specs = [s for s in OpenVinoInt8Plugin().candidates(_ctx(model, tmp_path))
             if s.config["quantization"] == "ort_qdq"]
    assert [s.config["static_shape"] for s in specs] == [False, True]
    feed = model.make_feeds(seed=6)[0]
    for spec in specs:
        assert spec.precision is Precision.INT8 and any(n.startswith(CONVERTED) for n in spec.notes)
        session = OpenVinoInt8Plugin().open(spec, ModelRef.of(model))
        got = session.to_numpy(session.run(session.prepare(feed)))
        assert _cosine(got, _reference(path, feed)) > 0.99, spec.label
        assert session.info()["int8_ops"] > 0


def test_the_static_candidate_is_measured(old_file, edge_specs, monkeypatch):
    import planner.plugins
    from planner.measure.evaluate import MeasureJob, run_job

    _, model = old_file
    static = edge_specs[0]
    monkeypatch.setattr(planner.plugins, "get_plugin", lambda name: Int8Plugin())
    result = run_job(MeasureJob(model=ModelRef.of(model), spec=static, quick=True,
                                sweep_max_batch=2, fidelity_batches=1))
    assert result["timing"].stats.p50_ms > 0
    assert result["info"]["quantization"] == "static" and result["info"]["precision"] == "int8"


def test_a_failed_conversion_fails_static_in_plain_words_and_dynamic_still_runs(tmp_path, monkeypatch):
    from onnx import version_converter

    path = constant_weights_classifier(tmp_path / "cls11.onnx")
    model = load_model(str(path))

    def refuses(*args, **kwargs):
        # onnx's own text for an op it has no schema for
        raise RuntimeError("/project/onnx/version_converter/convert.cc:101: convert_graph: Assertion "
                           "`schema_it != all_schemas.end()` failed: Op 'Frobnicate' has no registered schema")

    monkeypatch.setattr(version_converter, "convert_version", refuses)
    logs: list[str] = []
    ctx = dataclasses.replace(_ctx(model, tmp_path / "plan"), log=logs.append)
    built = []
    with pytest.raises(QuantizationError) as caught:
        for spec in Int8Plugin().candidates(ctx):
            built.append(spec)
    assert str(caught.value) == ("INT8 quantization failed: static QDQ: converting the opset-11 file to opset 17 "
                                 "failed: Op 'Frobnicate' has no registered schema")
    assert [s.config["mode"] for s in built] == ["dynamic"]
    assert any("quantized at the file's own opset 11" in n for n in built[0].notes)
    assert any(line.startswith("converting the opset-11") and "\ndetails: /project/onnx" in line for line in logs)


def test_the_tensorrt_qdq_file_is_made_from_the_converted_file(tmp_path):
    """TensorRT's per-channel Q/DQ needs opset 13 too; the file is built here, the engine only on a GPU."""
    from planner.onnx.export import shared_onnx
    from targets.nvidia.tensorrt import _int8_onnx

    path = constant_weights_classifier(tmp_path / "cls11.onnx")
    model = load_model(str(path))
    ctx = _ctx(model, tmp_path / "plan")
    dst, notes = _int8_onnx(ctx, shared_onnx(ctx), tmp_path / "plan" / "cls11.int8-qdq.onnx")
    assert any(n.startswith(CONVERTED) for n in notes) and any(n.startswith("calibrated on") for n in notes)
    assert [o.version for o in onnx.load(str(dst)).opset_import if o.domain == ""] == [17]
    feed = model.make_feeds(seed=7)[0]
    got = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert _cosine(got, _reference(path, feed)) > 0.99
