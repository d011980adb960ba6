"""cpu.torch: real configurations, JSON-round-trippable, the same function as the torch model."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from cpu_plugin_helpers import fake_hw, torch_output

from planner.codec import from_data, to_data
from planner.models.spec import ModelInputs
from planner.plugins import CandidateSpec, ModelRef, PlanContext, Precision, get_plugin
from targets.cpu import compute_threads
from targets.cpu.torch_cpu import TorchCpuPlugin


def _ctx(model, tmp_path: Path, hw=None, *, quick: bool = False) -> PlanContext:
    return PlanContext(hw=hw or fake_hw(), model=model, workdir=tmp_path, quick=quick)


def test_registered_under_its_entry_point() -> None:
    plugin = get_plugin("cpu.torch")
    assert isinstance(plugin, TorchCpuPlugin)
    assert plugin.target == "cpu"


def test_candidates_round_trip_and_differ(tiny, tmp_path) -> None:
    specs = list(TorchCpuPlugin().candidates(_ctx(tiny, tmp_path)))
    labels = [s.label for s in specs]
    assert len(set(labels)) == len(labels)
    for spec in specs:
        assert from_data(to_data(spec), CandidateSpec) == spec
        assert CandidateSpec.from_text(spec.to_text()) == spec
        assert spec.config["threads"] == spec.threads == 2
        assert spec.config["interop_threads"] == 1
    # The plain eager fp32 run with default settings belongs to torch.eager, not here.
    assert all(s.config["threads"] or s.config["channels_last"] or s.config["compile"] for s in specs)
    assert {(s.config["channels_last"], s.config["compile"]) for s in specs} == {
        (False, None), (True, None), (False, "default"), (True, "default")}
    assert all(s.precision is Precision.FP32 for s in specs)


def test_quick_mode_keeps_three_at_most(tiny, tmp_path) -> None:
    bf16_hw = fake_hw(features=("avx2", "avx512f", "avx512_bf16"))
    for hw in (fake_hw(), bf16_hw):
        specs = list(TorchCpuPlugin().candidates(_ctx(tiny, tmp_path, hw, quick=True)))
        assert 1 <= len(specs) <= 3


def test_bf16_only_on_cpus_with_native_bf16(tiny, tmp_path) -> None:
    plain = list(TorchCpuPlugin().candidates(_ctx(tiny, tmp_path)))
    assert not any(s.precision is Precision.BF16 for s in plain)
    for feature in ("avx512_bf16", "amx_bf16"):
        hw = fake_hw(features=("avx2", feature))
        specs = list(TorchCpuPlugin().candidates(_ctx(tiny, tmp_path, hw)))
        assert any(s.precision is Precision.BF16 for s in specs)


def test_no_compiler_means_no_compile_candidates(tiny, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    specs = list(TorchCpuPlugin().candidates(_ctx(tiny, tmp_path)))
    assert specs
    assert not any(s.config["compile"] for s in specs)
    assert any("no C compiler" in note for note in specs[0].notes)


def test_threads_are_usable_physical_cores() -> None:
    assert compute_threads(fake_hw(usable=3, physical=8, logical=16)) == 3
    assert compute_threads(fake_hw(usable=16, physical=8, logical=16)) == 8
    assert compute_threads(fake_hw(usable=4, physical=None, logical=4)) == 4


@pytest.mark.parametrize("channels_last", [False, True])
def test_eager_sessions_match_torch(tiny, tmp_path, channels_last) -> None:
    spec = next(s for s in TorchCpuPlugin().candidates(_ctx(tiny, tmp_path))
                if s.config["channels_last"] is channels_last and not s.config["compile"])
    session = TorchCpuPlugin().open(spec, ModelRef.of(tiny))
    feed = tiny.make_feeds(seed=5)[0]
    got = session.to_numpy(session.run(session.prepare(feed)))
    np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=1e-4, atol=1e-5)
    info = session.info()
    assert info["intra_op_threads"] == 2
    assert info["channels_last"] is channels_last
    assert info["precision"] == "fp32"


def test_compiled_session_matches_torch(tiny, tmp_path) -> None:
    spec = next(s for s in TorchCpuPlugin().candidates(_ctx(tiny, tmp_path))
                if s.config["compile"] and s.config["channels_last"])
    session = TorchCpuPlugin().open(spec, ModelRef.of(tiny))
    assert session.info()["compile"] == "default"
    for batch in (1, 3):
        feed = tiny.make_feeds(batch=batch, seed=6)[0]
        got = session.to_numpy(session.run(session.prepare(feed)))
        np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=1e-4, atol=1e-5)


def test_bf16_session_is_close_to_torch(tiny, tmp_path) -> None:
    hw = fake_hw(features=("avx2", "avx512_bf16"))
    spec = next(s for s in TorchCpuPlugin().candidates(_ctx(tiny, tmp_path, hw))
                if s.precision is Precision.BF16 and not s.config["compile"])
    session = TorchCpuPlugin().open(spec, ModelRef.of(tiny))
    feed = tiny.make_feeds(seed=5)[0]
    got = session.to_numpy(session.run(session.prepare(feed)))
    assert session.info()["precision"] == "bf16"
    # bf16 keeps 8 mantissa bits: close, not equal.
    np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=5e-2, atol=5e-2)


def test_check_refuses_onnx_only_models(tiny, tiny_onnx, plain_cpu_hw) -> None:
    reasons = TorchCpuPlugin().check(plain_cpu_hw, tiny_onnx)
    assert any("ONNX-only" in r for r in reasons)
    assert TorchCpuPlugin().check(plain_cpu_hw, tiny) == []


def test_check_reports_a_missing_package(tiny, plain_cpu_hw, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    assert "torch not installed (pip install torch)" in TorchCpuPlugin().check(plain_cpu_hw, tiny)


def test_non_image_input_gets_no_channels_last(tiny, text, tmp_path) -> None:
    flat = dataclasses.replace(tiny, inputs=ModelInputs.single((1, 16)))
    integer_4d = dataclasses.replace(tiny, inputs=ModelInputs.single((1, 3, 32, 32), dtype="uint8"))
    for model in (flat, integer_4d, text):
        logs: list[str] = []
        ctx = dataclasses.replace(_ctx(model, tmp_path), log=logs.append)
        specs = list(TorchCpuPlugin().candidates(ctx))
        assert specs and not any(s.config["channels_last"] for s in specs)
        assert any("not a 4-D float image" in line for line in logs)


def test_text_model_candidates(text, tmp_path) -> None:
    specs = list(TorchCpuPlugin().candidates(_ctx(text, tmp_path, fake_hw(features=("avx2", "avx512_bf16")))))
    assert {(s.precision, s.config["compile"]) for s in specs} == {
        (Precision.FP32, None), (Precision.FP32, "default"), (Precision.BF16, None), (Precision.BF16, "default")}
    assert all(s.dynamic_batch for s in specs)


@pytest.mark.parametrize("precision", [Precision.FP32, Precision.BF16])
def test_text_model_eager_sessions_keep_token_ids_integer(text, tmp_path, precision) -> None:
    hw = fake_hw(features=("avx2", "avx512_bf16"))
    spec = next(s for s in TorchCpuPlugin().candidates(_ctx(text, tmp_path, hw))
                if s.precision is precision and not s.config["compile"])
    session = TorchCpuPlugin().open(spec, ModelRef.of(text))
    for batch in (1, 3):
        feed = text.make_feeds(batch=batch, seed=26)[0]
        prepared = session.prepare(feed)
        # Only floating inputs take the session's precision: token ids and masks stay int64.
        assert [(t.dtype, tuple(t.shape)) for t in prepared] == [(torch.int64, (batch, 64))] * 2
        got = session.to_numpy(session.run(prepared))
        assert got.shape == (batch, 4)
        tol = 1e-4 if precision is Precision.FP32 else 5e-2
        np.testing.assert_allclose(got, torch_output(text, feed), rtol=tol, atol=tol)


def test_torchscript_model_gets_no_compile_candidates_and_says_why(tmp_path) -> None:
    from planner.models import load_model

    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.trace(torch.nn.Conv2d(3, 4, 3).eval(), torch.randn(1, 3, 8, 8)), str(path))
    model = load_model(str(path), input_shape="1x3x8x8")
    logged: list[str] = []
    ctx = PlanContext(hw=fake_hw(), model=model, workdir=tmp_path, log=logged.append)
    specs = list(TorchCpuPlugin().candidates(ctx))
    assert specs and not any(s.config.get("compile") for s in specs)
    assert any("cannot compile a ScriptModule" in line for line in logged)


class _TinyCnn(torch.nn.Module):
    """A tiny image classifier, saved below as the two program files a user may bring instead of a module."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


@pytest.mark.parametrize("kind", ["pt2", "torchscript"])
def test_quick_candidates_of_a_saved_program_run_it_reloaded(tmp_path, kind) -> None:
    """An exported program (.pt2) or TorchScript file: each quick candidate that a screen times (compiling is
    measured on a module above) rebuilds the program from its file, as a measuring worker does, and computes what
    the loaded program computes, bf16 within its rounding. The source kinds' plans (tests/test_model_sources*.py)
    run the file through ONNX Runtime; this is the PyTorch side of the same files."""
    from planner.models import load_model

    torch.manual_seed(0)
    module, x = _TinyCnn().eval(), torch.randn(1, 3, 16, 16)
    path = tmp_path / ("model.pt2" if kind == "pt2" else "model.pt")
    if kind == "pt2":
        torch.export.save(torch.export.export(module, (x,)), str(path))
        model = load_model(str(path))
    else:
        torch.jit.save(torch.jit.trace(module, x), str(path))
        model = load_model(str(path), input_shape="1x3x16x16")
    hw = fake_hw(features=("avx2", "avx512_bf16"))
    specs = list(TorchCpuPlugin().candidates(_ctx(model, tmp_path, hw, quick=True)))
    eager = [s for s in specs if not s.config["compile"]]
    assert {(s.precision, s.config["channels_last"]) for s in eager} == {(Precision.FP32, True), (Precision.BF16, True)}
    feed = model.make_feeds(seed=5)[0]
    for spec in eager:
        session = TorchCpuPlugin().open(spec, ModelRef.of(model))
        got = session.to_numpy(session.run(session.prepare(feed)))
        tol = 1e-4 if spec.precision is Precision.FP32 else 5e-2
        np.testing.assert_allclose(got, torch_output(model, feed), rtol=tol, atol=tol)
        assert session.info()["channels_last"] is True and session.info()["precision"] == str(spec.precision)
