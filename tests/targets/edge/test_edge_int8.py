"""edge.int8 on demo:tiny: static QDQ and dynamic INT8 build, run close to fp32, and shrink the file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from planner.onnx.quantize import NO_INT8_DOT_NOTE, int8_cpu_notes, needs_reduced_range
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Precision, Target
from targets.edge.int8 import Int8Plugin


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def built(tiny, fake_hw, tmp_path_factory):
    """The plan context and the specs edge.int8 builds for demo:tiny on a 2-core x86 without VNNI."""
    logs: list[str] = []
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path_factory.mktemp("int8"),
                      log=logs.append)
    return ctx, list(Int8Plugin().candidates(ctx))


def test_plugin_identity():
    assert Int8Plugin.name == "edge.int8"
    assert Int8Plugin.target is Target.EDGE


def test_check_does_not_need_an_arm_board(tiny, fake_hw):
    assert Int8Plugin().check(fake_hw(device_class="cpu_server"), tiny) == []
    assert Int8Plugin().check(fake_hw(device_class="raspberry_pi", is_x86=False,
                                      features=("neon", "asimddp")), tiny) == []


def test_both_candidates_are_int8_files_under_the_workdir(built):
    ctx, specs = built
    assert [s.config["mode"] for s in specs] == ["static", "dynamic"]
    for spec in specs:
        assert spec.precision is Precision.INT8
        assert spec.threads == 2 and spec.config["intra_op_threads"] == 2
        path = Path(spec.artifacts["onnx"])
        assert path.is_file() and path.is_relative_to(ctx.workdir)
        assert CandidateSpec.from_text(spec.to_text()) == spec


def test_notes_say_calibration_was_random_and_there_is_no_vnni(built):
    _, (static, dynamic) = built
    assert any("random inputs" in n and "--val-data" in n for n in static.notes)
    assert static.config["calibration_batches"] > 0
    for spec in (static, dynamic):
        assert any("no VNNI: INT8 may not be faster here" in n for n in spec.notes)
        assert spec.config["reduce_range"] is True


def test_quantized_files_are_smaller_than_fp32(built):
    ctx, specs = built
    fp32 = os.path.getsize(ctx.shared["onnx"].path)
    for spec in specs:
        assert os.path.getsize(spec.artifacts["onnx"]) < fp32, spec.label


def test_outputs_stay_close_to_fp32(built, tiny):
    import torch

    _, specs = built
    plugin = Int8Plugin()
    for spec in specs:
        session = plugin.open(spec, ModelRef.of(tiny))
        for batch in (1, 4):
            for feed in tiny.make_feeds(batch=batch, count=3, seed=1000):
                out = session.to_numpy(session.run(session.prepare(feed)))
                with torch.inference_mode():
                    ref = tiny.module(torch.from_numpy(feed["x"])).numpy()
                assert out.shape == ref.shape
                assert _cosine(out, ref) > 0.98, spec.label
        info = session.info()
        assert info["intra_op_threads"] == 2
        assert info["providers"] == ["CPUExecutionProvider"]
        assert info["quantization"] == spec.config["mode"]


def test_cpu_notes_and_reduced_range_follow_the_int8_dot_features(fake_hw):
    assert int8_cpu_notes(fake_hw()) == [NO_INT8_DOT_NOTE]
    assert needs_reduced_range(fake_hw())
    vnni = fake_hw(features=("avx2", "avx512_vnni"))
    assert "avx512_vnni" in int8_cpu_notes(vnni)[0]
    assert not needs_reduced_range(vnni)
    # 16-bit intermediate sums are an x86 (VPMADDUBSW) problem; ARM keeps full-range weights.
    assert not needs_reduced_range(fake_hw(is_x86=False, features=("neon",)))


def test_a_failing_quantizer_is_reported_with_the_other_candidate_kept(tiny, fake_hw, tmp_path, monkeypatch):
    import targets.edge.int8 as int8
    from planner.onnx.export import ExportResult

    def broken(*args, **kwargs):
        raise RuntimeError("calibration exploded")

    monkeypatch.setattr(int8, "quantize_qdq", broken)
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path)
    specs: list[CandidateSpec] = []
    with pytest.raises(int8.QuantizationError, match="static QDQ: .*calibration exploded"):
        specs.extend(Int8Plugin().candidates(ctx))
    assert [s.config["mode"] for s in specs] == ["dynamic"]
    assert isinstance(ctx.shared["onnx"], ExportResult)


def test_the_measure_worker_times_and_sweeps_it(built, tiny, monkeypatch):
    import planner.plugins
    from planner.measure.evaluate import MeasureJob, run_job

    # Entry points are registered by the package metadata; look the plugin up directly here.
    monkeypatch.setattr(planner.plugins, "get_plugin", lambda name: Int8Plugin())
    _, (static, _) = built
    result = run_job(MeasureJob(model=ModelRef.of(tiny), spec=static, quick=True,
                                sweep_max_batch=4, fidelity_batches=2))
    assert result["timing"].stats.p50_ms > 0
    assert [p.batch for p in result["sweep"].points][0] == 1 and len(result["sweep"].points) > 1
    assert len(result["outputs"]) == 2 and result["info"]["quantization"] == "static"


def test_text_model_quantizes_with_feeds_of_both_inputs(text, text_ctx):
    """demo:text: calibration feeds carry input_ids and attention_mask; sessions take both, int64.

    `text_ctx` (tests/targets/conftest.py) shares its ONNX export with the CPU plugin tests.
    """
    import torch

    specs = list(Int8Plugin().candidates(text_ctx))
    assert specs[0].config["calibration_batches"] > 0
    assert [s.config["mode"] for s in specs] == ["static", "dynamic"]
    for spec in specs:
        session = Int8Plugin().open(spec, ModelRef.of(text))
        for batch in (1, 3):
            feed = text.make_feeds(batch=batch, seed=1000)[0]
            out = session.to_numpy(session.run(session.prepare(feed)))
            with torch.inference_mode():
                ref = text.module(*(torch.from_numpy(a) for a in feed.values())).numpy()
            assert out.shape == ref.shape == (batch, 4)
            assert _cosine(out, ref) > 0.9, spec.label
