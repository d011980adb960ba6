"""edge.ternary: weights take at most three values per output channel, and the session runs."""

from __future__ import annotations

import copy

import numpy as np

from planner.plugins import CandidateSpec, ModelRef, PlanContext, Precision, Target
from targets.edge.ternary import (
    THRESHOLD_FACTOR,
    TernaryPlugin,
    TernarySession,
    ternarize_module,
    ternarize_weight,
)


def _ternary_layers(module):
    from torch import nn

    return [m for m in module.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))]


def test_plugin_identity():
    assert TernaryPlugin.name == "edge.ternary"
    assert TernaryPlugin.target is Target.EDGE


def test_weight_follows_the_threshold_rule():
    import torch

    torch.manual_seed(0)
    weight = torch.randn(6, 4, 3, 3)
    weight[5] = 0  # an all-zero channel must stay zero, not become NaN
    ternary, alpha = ternarize_weight(weight)
    flat, got = weight.reshape(6, -1), ternary.reshape(6, -1)
    for c in range(5):
        keep = flat[c].abs() > THRESHOLD_FACTOR * flat[c].abs().mean()
        expected_alpha = flat[c].abs()[keep].mean()
        assert torch.isclose(alpha[c], expected_alpha)
        assert torch.equal(got[c] == 0, ~keep)
        assert torch.allclose(got[c][keep], torch.sign(flat[c][keep]) * expected_alpha)
        assert len(torch.unique(got[c])) <= 3
    assert not got[5].any() and alpha[5] == 0


def test_module_weights_take_at_most_three_values_per_channel(edge_tiny):
    module = copy.deepcopy(edge_tiny.module)
    stats = ternarize_module(module)
    layers = _ternary_layers(module)
    assert stats.layers == len(layers) == 3
    for layer in layers:
        for row in layer.weight.detach().reshape(layer.weight.shape[0], -1):
            assert len(np.unique(row.numpy())) <= 3
    assert stats.ternary_weights == sum(layer.weight.numel() for layer in layers)
    assert 0 < stats.zero_fraction < 1
    assert stats.packed_bytes_estimate < stats.fp32_bytes


def test_stats_without_apply_leave_the_module_alone(edge_tiny):
    import torch

    before = {k: v.clone() for k, v in edge_tiny.module.state_dict().items()}
    stats = ternarize_module(edge_tiny.module, apply=False)
    assert stats.layers == 3
    after = edge_tiny.module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_quick_runs_skip_it_off_edge_boards(edge_tiny, fake_hw, tmp_path):
    logs: list[str] = []
    ctx = PlanContext(hw=fake_hw(), model=edge_tiny, workdir=tmp_path, quick=True, log=logs.append)
    assert list(TernaryPlugin().candidates(ctx)) == []
    assert any("skipped in quick runs" in line for line in logs)
    board = PlanContext(hw=fake_hw(device_class="raspberry_pi", is_x86=False), model=edge_tiny,
                        workdir=tmp_path, quick=True)
    assert len(list(TernaryPlugin().candidates(board))) == 1


def test_candidate_opens_and_runs(edge_tiny, fake_hw, tmp_path):
    import torch

    ctx = PlanContext(hw=fake_hw(), model=edge_tiny, workdir=tmp_path)
    (spec,) = TernaryPlugin().candidates(ctx)
    assert spec.precision is Precision.TERNARY
    assert CandidateSpec.from_text(spec.to_text()) == spec
    assert any(n.startswith("estimated packed size") for n in spec.notes)
    session = TernaryPlugin().open(spec, ModelRef.of(edge_tiny))
    assert isinstance(session, TernarySession)
    feed = edge_tiny.make_feeds(batch=4, seed=1000)[0]
    out = session.to_numpy(session.run(session.prepare(feed)))
    with torch.inference_mode():
        ref = edge_tiny.module(torch.from_numpy(feed["x"])).numpy()
    assert out.shape == ref.shape and np.isfinite(out).all()
    assert not np.allclose(out, ref)  # the weights really changed
    for layer in _ternary_layers(session.module):
        for row in layer.weight.detach().reshape(layer.weight.shape[0], -1):
            assert len(np.unique(row.numpy())) <= 3
    info = session.info()
    assert info["precision"] == "ternary weights, fp32 compute"
    assert info["estimated_packed_bytes"] < info["fp32_bytes"]
    assert "estimate" in info["estimated_packed_bytes_basis"]


def test_onnx_only_model_is_rejected(fake_hw):
    import types

    model = types.SimpleNamespace(has_torch=False, onnx_path="m.onnx")
    assert TernaryPlugin().check(fake_hw(), model) == [
        "the model is ONNX-only: edge.ternary needs a PyTorch module (plan the PyTorch model "
        "itself, not its ONNX export)"]


def test_a_higher_threshold_zeroes_more_weights(edge_tiny):
    fractions = [ternarize_module(edge_tiny.module, factor=f, apply=False).zero_fraction
                 for f in (0.5, 0.7, 0.9)]
    assert 0 < fractions[0] < fractions[1] < fractions[2] < 1


def test_the_measure_worker_times_it(edge_tiny, fake_hw, tmp_path, monkeypatch):
    import planner.plugins
    from planner.measure.evaluate import MeasureJob, run_job

    # Entry points are registered by the package metadata; look the plugin up directly here.
    monkeypatch.setattr(planner.plugins, "get_plugin", lambda name: TernaryPlugin())
    (spec,) = TernaryPlugin().candidates(PlanContext(hw=fake_hw(), model=edge_tiny, workdir=tmp_path))
    result = run_job(MeasureJob(model=ModelRef.of(edge_tiny), spec=spec, quick=True,
                                fidelity_batches=2))
    assert result["timing"].stats.p50_ms > 0
    assert result["info"]["estimated_packed_bytes"] > 0


def test_text_model_runs_ternary_with_integer_inputs(fake_hw, tmp_path):
    """demo:text: its Linear layers are ternarized (not the embeddings); the session takes both int64 inputs."""
    import torch

    from planner.models import load_model

    text = load_model("demo:text")
    (spec,) = TernaryPlugin().candidates(PlanContext(hw=fake_hw(), model=text, workdir=tmp_path))
    session = TernaryPlugin().open(spec, ModelRef.of(text))
    feed = text.make_feeds(batch=2, seed=1000)[0]
    prepared = session.prepare(feed)
    assert [t.dtype for t in prepared] == [torch.int64, torch.int64]
    out = session.to_numpy(session.run(prepared))
    assert out.shape == (2, 4) and np.isfinite(out).all()
    assert session.info()["ternary_layers"] == 9  # qkv, proj, fc1, fc2 per block, and the head
