"""cpu.openvino_int8: NNCF and QDQ INT8 on OpenVINO, f32/bf16 for the rest, INT8 ops read back at run time."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from cpu_plugin_helpers import fake_hw, torch_output

from planner.codec import from_data, to_data
from planner.onnx.quantize import QuantizationError
from planner.plugins import CandidateSpec, ModelRef, Precision, get_plugin
from targets.cpu import openvino_int8
from targets.cpu.openvino_int8 import NNCF_MISSING_NOTE, OpenVinoInt8Plugin

VNNI_BF16 = ("avx2", "avx512_vnni", "avx512_bf16")


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def int8_specs(shared_ctx):
    """demo:tiny quick candidates on the fake 2-core CPU (no bf16): NNCF and QDQ, f32 each."""
    return list(OpenVinoInt8Plugin().candidates(dataclasses.replace(shared_ctx, quick=True)))


def test_registered_under_its_entry_point() -> None:
    assert isinstance(get_plugin("cpu.openvino_int8"), OpenVinoInt8Plugin)


def test_candidates_round_trip(int8_specs, shared_ctx) -> None:
    # Plain NNCF INT8 of demo:tiny stays within the fidelity target, so no accuracy-controlled variant.
    assert [s.label for s in int8_specs] == [
        "openvino int8 nncf f32 latency 2t", "openvino int8 nncf f32 latency 2t static",
        "openvino int8 qdq f32 latency 2t", "openvino int8 qdq f32 latency 2t static"]
    for spec in int8_specs:
        assert from_data(to_data(spec), CandidateSpec) == spec
        assert spec.precision is Precision.INT8
        assert spec.config["precision"] == "fp32" and spec.config["hint"] == "LATENCY"
        assert any(n.startswith("calibrated on ") for n in spec.notes)
        assert spec.dynamic_batch is not spec.config["static_shape"]
    nncf_ir = int8_specs[0].artifacts["model"]
    assert nncf_ir.endswith(".xml") and "openvino_int8" in nncf_ir
    assert int8_specs[2].artifacts["model"].endswith(".int8-qdq.onnx")


def test_sessions_run_in_int8_and_match_torch(tiny, int8_specs) -> None:
    plugin = OpenVinoInt8Plugin()
    for spec in int8_specs:
        session = plugin.open(spec, ModelRef.of(tiny))
        for batch in (1, 3) if spec.dynamic_batch else (1,):
            feed = tiny.make_feeds(batch=batch, seed=31)[0]
            got = session.to_numpy(session.run(session.prepare(feed)))
            assert got.shape == (batch, 10)
            assert _cosine(got, torch_output(tiny, feed)) > 0.99, spec.label
        info = session.info()
        assert info["INFERENCE_PRECISION_HINT"] == "f32"
        assert info["int8_ops"] > 0
        assert sum(v for k, v in info["op_precisions"].items() if k in ("i8", "u8")) == info["int8_ops"]
        assert info["quantization"] == spec.config["quantization"]
        assert "note" not in info


def test_bf16_candidates_only_with_native_bf16(tiny, shared_ctx) -> None:
    ctx = dataclasses.replace(shared_ctx, hw=fake_hw(features=VNNI_BF16), quick=True)
    specs = list(OpenVinoInt8Plugin().candidates(ctx))
    assert [(s.config["quantization"], s.config["precision"], s.config["static_shape"]) for s in specs] == [
        ("nncf", "fp32", False), ("nncf", "bf16", False), ("nncf", "bf16", True),
        ("ort_qdq", "fp32", False), ("ort_qdq", "bf16", False), ("ort_qdq", "bf16", True)]
    assert not any("reduce_range" in n for s in specs for n in s.notes)  # VNNI: full-range weights
    bf16 = OpenVinoInt8Plugin().open(specs[1], ModelRef.of(tiny))
    feed = tiny.make_feeds(seed=32)[0]
    assert _cosine(bf16.to_numpy(bf16.run(bf16.prepare(feed))), torch_output(tiny, feed)) > 0.99
    info = bf16.info()
    assert info["int8_ops"] > 0
    # Read back, not echoed: bf16 only where this CPU really has it.
    import openvino as ov

    native = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    assert info["INFERENCE_PRECISION_HINT"] == ("bf16" if native else "f32")


def test_text_model_nncf_uses_the_transformer_type(text, text_ctx) -> None:
    specs = list(OpenVinoInt8Plugin().candidates(text_ctx))
    nncf_spec = next(s for s in specs if s.config["quantization"] == "nncf")
    assert any("transformer model type" in n for n in nncf_spec.notes)
    assert all(any("sequence length fixed at 64" in n for n in s.notes) for s in specs)
    session = OpenVinoInt8Plugin().open(nncf_spec, ModelRef.of(text))
    feed = text.make_feeds(batch=2, seed=33)[0]
    prepared = session.prepare(feed)
    assert [(a.data.dtype, tuple(a.shape)) for a in prepared.values()] == [(np.int64, (2, 64))] * 2
    # A randomly initialised encoder with four small logits: INT8 noise weighs more than on a trained model.
    assert _cosine(session.to_numpy(session.run(prepared)), torch_output(text, feed)) > 0.9
    info = session.info()
    assert info["int8_ops"] > 0 and info["INFERENCE_PRECISION_HINT"] == "f32"
    assert info["int8_compute_ops"].split(" of ")[0] != "0"


def test_missing_nncf_keeps_the_qdq_candidates(shared_ctx, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nncf" else real(name, *a))
    plugin = OpenVinoInt8Plugin()
    assert plugin.check(shared_ctx.hw, shared_ctx.model) == []  # the plugin stays useful without nncf
    specs = list(plugin.candidates(dataclasses.replace(shared_ctx, quick=True)))
    assert [s.config["quantization"] for s in specs] == ["ort_qdq", "ort_qdq"]
    assert NNCF_MISSING_NOTE in specs[0].notes and "pip install nncf" in NNCF_MISSING_NOTE


def test_a_failing_family_is_reported_after_the_working_one(shared_ctx, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("Cannot quantize op Frobnicate")

    monkeypatch.setattr(openvino_int8, "quantize_nncf", broken)
    built = []
    with pytest.raises(QuantizationError, match="NNCF: .*Cannot quantize op Frobnicate"):
        for spec in OpenVinoInt8Plugin().candidates(dataclasses.replace(shared_ctx, quick=True)):
            built.append(spec)
    assert [s.config["quantization"] for s in built] == ["ort_qdq", "ort_qdq"]


def test_accuracy_control_judges_by_accuracy_with_labels_and_budget(shared_ctx) -> None:
    ctx = dataclasses.replace(shared_ctx, accuracy_budget=0.02, val_data_basis="built-in held-out set")
    metric = openvino_int8.control_metric(ctx, [np.zeros(4, dtype=np.int64)])
    assert (metric.name, metric.max_drop) == ("accuracy", 0.02) and "held-out" in metric.basis
    # No labels (or no budget): agreement with the float model, held above the INT8 fidelity gate.
    for labels, budget in ((None, 0.02), ([np.zeros(4, dtype=np.int64)], None)):
        metric = openvino_int8.control_metric(dataclasses.replace(ctx, accuracy_budget=budget), labels)
        assert metric.name == "cosine" and 1 - metric.max_drop > 0.99


def test_accuracy_control_gives_sensitive_ops_back_to_float(shared_ctx, monkeypatch, tiny) -> None:
    # A target no INT8 model can meet: NNCF must rank the quantized ops and give the worst back to float.
    monkeypatch.setattr(openvino_int8, "COSINE_TARGET", 1 - 1e-9)
    monkeypatch.setattr(openvino_int8, "MAX_RESTORED", 2)
    logs: list[str] = []
    quick = list(OpenVinoInt8Plugin().candidates(dataclasses.replace(shared_ctx, quick=True, log=logs.append)))
    assert not any(s.config["quantization"] == "nncf_accuracy_control" for s in quick)
    assert any("not run in a quick plan" in line and "without --quick" in line for line in logs)
    logs.clear()
    specs = list(OpenVinoInt8Plugin().candidates(dataclasses.replace(shared_ctx, quick=False, log=logs.append)))
    controlled = [s for s in specs if s.config["quantization"] == "nncf_accuracy_control"]
    assert [s.label for s in controlled] == ["openvino int8 nncf-ac f32 latency 2t",
                                             "openvino int8 nncf-ac f32 latency 2t static"]
    why = controlled[0].notes[0]
    assert why.startswith("nncf-ac: NNCF quantization with accuracy control: plain NNCF INT8 cosine")
    assert "given back to float (at most 2)" in why and "still above the allowed drop" in why
    assert any("running NNCF quantization with accuracy control" in line for line in logs)
    session = OpenVinoInt8Plugin().open(controlled[0], ModelRef.of(tiny))
    plain = OpenVinoInt8Plugin().open(specs[0], ModelRef.of(tiny))
    restored = int(session.info()["int8_compute_ops"].split(" of ")[0])
    assert restored < int(plain.info()["int8_compute_ops"].split(" of ")[0])


def test_check_reports_missing_openvino(tiny, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a))
    assert OpenVinoInt8Plugin().check(fake_hw(), tiny) == ["openvino not installed (pip install openvino)"]
