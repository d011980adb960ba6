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
def specs(shared_ctx):
    """The full candidate list for demo:tiny on the fake 2-core CPU without bf16."""
    return list(OpenVinoPlugin().candidates(shared_ctx))


def test_registered_under_its_entry_point() -> None:
    assert isinstance(get_plugin("cpu.openvino"), OpenVinoPlugin)


def test_candidates_round_trip(specs) -> None:
    assert [s.label for s in specs] == ["openvino f32 latency 2t", "openvino f32 throughput 2t",
                                        "openvino f32 latency 2t static"]
    for spec in specs:
        assert from_data(to_data(spec), CandidateSpec) == spec
        assert spec.precision is Precision.FP32
    throughput = next(s for s in specs if s.config["hint"] == "THROUGHPUT")
    assert any("batch serving" in n for n in throughput.notes)
    static = next(s for s in specs if s.config["static_shape"])
    assert not static.dynamic_batch


def test_bf16_candidates_only_with_native_bf16(shared_ctx) -> None:
    for feature in ("avx512_bf16", "amx_bf16"):
        ctx = dataclasses.replace(shared_ctx, hw=fake_hw(features=("avx2", feature)))
        specs = list(OpenVinoPlugin().candidates(ctx))
        bf16 = [s for s in specs if s.precision is Precision.BF16]
        assert {s.config["hint"] for s in bf16} == {"LATENCY", "THROUGHPUT"}
        # f32 stays a candidate of its own, pinned explicitly (bf16 is the default there).
        assert any(s.precision is Precision.FP32 for s in specs)
        quick = list(OpenVinoPlugin().candidates(dataclasses.replace(ctx, quick=True)))
        assert len(quick) <= 3
        assert {s.precision for s in quick} == {Precision.FP32, Precision.BF16}


def test_quick_mode_keeps_it_small(shared_ctx) -> None:
    quick = list(OpenVinoPlugin().candidates(dataclasses.replace(shared_ctx, quick=True)))
    assert 1 <= len(quick) <= 3


def test_f32_sessions_match_torch_and_report_real_properties(tiny, specs) -> None:
    plugin = OpenVinoPlugin()
    for spec in specs:
        session = plugin.open(spec, ModelRef.of(tiny))
        batches = (1, 4) if spec.dynamic_batch else (1,)
        for batch in batches:
            array = tiny.make_inputs(batch=batch, seed=12)[0]
            got = session.to_numpy(session.run(session.prepare(array)))
            np.testing.assert_allclose(got, torch_output(tiny, array), rtol=1e-4, atol=1e-5)
        info = session.info()
        assert info["INFERENCE_PRECISION_HINT"] == "f32"
        assert info["PERFORMANCE_HINT"] == spec.config["hint"]
        assert info["INFERENCE_NUM_THREADS"] == 2
        assert isinstance(info["NUM_STREAMS"], int) and info["NUM_STREAMS"] >= 1
        assert info["runtime"].startswith("openvino ")
        assert "note" not in info


def test_outputs_survive_the_next_inference(tiny, specs) -> None:
    session = OpenVinoPlugin().open(specs[0], ModelRef.of(tiny))
    a, b = tiny.make_inputs(count=2, seed=13)
    first = session.to_numpy(session.run(session.prepare(a)))
    session.run(session.prepare(b))
    np.testing.assert_allclose(first, torch_output(tiny, a), rtol=1e-4, atol=1e-5)


def test_bf16_request_reports_what_openvino_really_runs(tiny, shared_ctx) -> None:
    ctx = dataclasses.replace(shared_ctx, hw=fake_hw(features=("avx2", "avx512_bf16")))
    spec = next(s for s in OpenVinoPlugin().candidates(ctx)
                if s.precision is Precision.BF16 and s.config["hint"] == "LATENCY")
    session = OpenVinoPlugin().open(spec, ModelRef.of(tiny))
    info = session.info()
    array = tiny.make_inputs(seed=14)[0]
    got = session.to_numpy(session.run(session.prepare(array)))
    np.testing.assert_allclose(got, torch_output(tiny, array), rtol=5e-2, atol=5e-2)
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
    array = tiny.make_inputs(seed=15)[0]
    np.testing.assert_allclose(session.to_numpy(session.run(session.prepare(array))),
                               torch_output(tiny, array), rtol=1e-4, atol=1e-5)


def test_check_reports_a_missing_package(tiny, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real(name, *a))
    assert OpenVinoPlugin().check(fake_hw(), tiny) == ["openvino not installed (pip install openvino)"]
