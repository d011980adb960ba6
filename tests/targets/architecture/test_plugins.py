"""Architecture plugins: candidates any worker can rebuild, composing with hardware plugins, and clear reasons."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from cpu_plugin_helpers import fake_hw

from planner.measure.gate import PlanGate
from planner.models import load_model
from planner.plugins import ModelRef, PlanContext, get_plugin


@pytest.fixture
def ctx(tiny, tmp_path: Path) -> PlanContext:
    """A quick plan context on the tiny demo, with the plan's fidelity gate as the pipeline gives it."""
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path, quick=True)
    ctx.gate = PlanGate.for_context(ctx)
    return ctx


def _outputs(session, model) -> np.ndarray:
    feed = model.make_feeds()[0]
    return session.to_numpy(session.run(session.prepare(feed)))


def test_fold_candidate_reopens_in_a_worker_and_matches_the_original(tiny, ctx) -> None:
    plugin = get_plugin("architecture.fold")
    assert plugin.check(ctx.hw, tiny) == []
    (spec,) = plugin.candidates(ctx)
    assert spec.config["transform"] == {"plugin": "architecture.fold"} and spec.config["architecture"] == "exact"
    session = plugin.open(spec, ModelRef.of(tiny))
    reference = tiny.module(*[__import__("torch").from_numpy(a) for a in tiny.make_feeds()[0].values()])
    assert np.allclose(_outputs(session, tiny), reference.detach().numpy(), atol=1e-5)
    assert "bn1" not in dict(session.module.named_modules())


def test_a_model_ref_with_a_transform_gives_any_plugin_the_changed_model(tiny) -> None:
    ref = dataclasses.replace(ModelRef.of(tiny), transform={"plugin": "architecture.fold"})
    loaded = ref.load()
    assert "bn1" not in dict(loaded.module.named_modules())
    assert loaded.parameters < tiny.parameters  # the norm's affine terms are gone
    session = get_plugin("cpu.torch").open(next(iter(get_plugin("cpu.torch").candidates(
        PlanContext(hw=fake_hw(), model=loaded, workdir=Path("."), quick=True)))), ref)
    assert "bn1" not in dict(session.module.named_modules())


def test_plugins_that_do_not_apply_say_why(tiny) -> None:
    hw = fake_hw()
    assert "no layer is worth factorising" in get_plugin("architecture.lowrank").check(hw, tiny)[0]
    assert "already aligned" in get_plugin("architecture.align").check(hw, tiny)[0] or \
        "finds no conv" in get_plugin("architecture.align").check(hw, tiny)[0]
    assert "knows no redesign for demo:tiny" in get_plugin("architecture.redesign").check(hw, tiny)[0]
    onnx_only = dataclasses.replace(tiny, module=None, onnx_path=Path("model.onnx"))
    assert any("ONNX-only" in r for r in get_plugin("architecture.fold").check(hw, onnx_only))


def test_prune_offers_a_gated_setting_or_says_it_needs_fine_tuning(ctx) -> None:
    (spec,) = get_plugin("architecture.prune").candidates(ctx)
    assert spec.config["architecture"] == "approximate"
    note = " ".join(spec.notes)
    if spec.label.endswith("(needs fine-tuning)"):
        assert "no setting passed the fp32 fidelity check" in note and "cosine similarity" in note
    else:
        assert "passes the fp32 fidelity check" in note


def test_the_inefficient_demo_gets_its_redesign_and_exact_alignment(tmp_path: Path) -> None:
    model = load_model("demo:inefficient", inputs=None, input_shape="1x3x64x64")
    hw = fake_hw()
    ctx = PlanContext(hw=hw, model=model, workdir=tmp_path, quick=True)
    redesign = get_plugin("architecture.redesign")
    assert redesign.check(hw, model) == []
    (spec,) = redesign.candidates(ctx)
    session = redesign.open(spec, ModelRef.of(model))
    assert type(session.module).__name__ == "EfficientClassifier"
    align = get_plugin("architecture.align")
    (aligned,) = align.candidates(ctx)
    assert aligned.config["transform"]["layers"]  # the analysis named the misaligned convs
    session = align.open(aligned, ModelRef.of(model))
    feed = model.make_feeds()[0]
    import torch

    reference = model.module(torch.from_numpy(feed["x"] if "x" in feed else next(iter(feed.values()))))
    assert np.allclose(_outputs(session, model), reference.detach().numpy(), atol=1e-5)


def _vnni_hw():
    """The fake 2-core x86 profile with AVX-512 VNNI added (no AMX): INT8 kernels want multiples of 16."""
    hw = fake_hw()
    return fake_hw(features=(*hw.cpu.features, "avx512f", "avx512bw", "avx512_vnni"))


def test_align_offers_padding_to_sixteen_for_int8_on_a_vnni_cpu_and_it_is_exact(tmp_path: Path) -> None:
    import torch

    model = load_model("demo:inefficient", inputs=None, input_shape="1x3x64x64")
    ctx = PlanContext(hw=_vnni_hw(), model=model, workdir=tmp_path, quick=True)
    align = get_plugin("architecture.align")
    to_8, to_16 = align.candidates(ctx)
    assert to_16.label == "align channels to 16 for INT8 kernels (exact)"
    assert to_16.config["transform"]["multiple"] == 16 and to_16.config["transform"]["pairs_with"] == "int8"
    assert to_16.config["transform"]["layers"] == to_8.config["transform"]["layers"]  # only where lanes idle
    assert any("targets INT8 kernels" in n and "VNNI" in n for n in to_16.notes)
    session = align.open(to_16, ModelRef.of(model))
    convs = [m.out_channels for m in session.module.modules() if isinstance(m, torch.nn.Conv2d)]
    assert all(c % 16 == 0 for c in convs)
    feed = model.make_feeds()[0]
    reference = model.module(torch.from_numpy(next(iter(feed.values()))))
    assert np.allclose(_outputs(session, model), reference.detach().numpy(), atol=1e-5)


def test_the_int8_padded_model_quantizes_with_an_int8_plugin(tmp_path: Path) -> None:
    model = load_model("demo:inefficient", inputs=None, input_shape="1x3x64x64")
    (_, to_16) = get_plugin("architecture.align").candidates(
        PlanContext(hw=_vnni_hw(), model=model, workdir=tmp_path, quick=True))
    ref = dataclasses.replace(ModelRef.of(model), transform=to_16.config["transform"])
    padded = ref.load()
    int8 = get_plugin("edge.int8")
    static = next(s for s in int8.candidates(PlanContext(hw=_vnni_hw(), model=padded, workdir=tmp_path / "q",
                                                         quick=True)) if "static" in s.label)
    session = int8.open(static, ref)
    import torch

    feed = model.make_feeds()[0]
    reference = model.module(torch.from_numpy(next(iter(feed.values())))).detach().numpy().ravel()
    quantized = _outputs(session, model).ravel()
    cosine = float(reference @ quantized / (np.linalg.norm(reference) * np.linalg.norm(quantized)))
    assert cosine > 0.99  # the INT8 gate: INT8 of the padded model still computes the original's function
