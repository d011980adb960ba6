"""The plugin contract: declared needs become every reason at once; specs carry rows per call."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import pytest
from hardware_profiles import two_core_x86

from planner.codec import from_data, to_data
from planner.hardware import HardwareProfile
from planner.plugins import MESSAGES, CandidateSpec, Plugin, Target, discover


class _Needy(Plugin):
    """A plugin declaring every need, so each reason can be provoked."""

    name = "test.needy"
    target = Target.NVIDIA
    summary = "needs everything"
    requires = ("surely_not_installed_a", "surely_not_installed_b")
    needs_torch_module = True
    needs_cuda = True
    needs_onnx = True


def _model(*, torch: bool, onnx: str | None) -> types.SimpleNamespace:
    return types.SimpleNamespace(has_torch=torch, onnx_path=Path(onnx) if onnx else None)


def _no_gpu() -> HardwareProfile:
    return two_core_x86()  # a real profile of a CPU-only machine


def test_check_returns_every_reason_at_once(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    reasons = _Needy().check(_no_gpu(), _model(torch=False, onnx="m.onnx"))
    assert reasons == [
        "surely_not_installed_a not installed (pip install surely_not_installed_a)",
        "surely_not_installed_b not installed (pip install surely_not_installed_b)",
        MESSAGES["no_torch_module"].format(plugin="test.needy"),
        MESSAGES["no_gpu_in_profile"],
        MESSAGES["cuda_unavailable"],
    ]


def test_an_empty_declaration_has_no_reasons():
    class Plain(Plugin):
        name = "test.plain"

    assert Plain().check(_no_gpu(), _model(torch=False, onnx=None)) == []


def test_onnx_need_asks_for_onnx_only_when_it_must_export(monkeypatch):
    class OnnxUser(Plugin):
        name = "test.onnx_user"
        needs_onnx = True

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnx" else real(name, *a))
    assert OnnxUser().check(_no_gpu(), _model(torch=True, onnx=None)) == [
        "onnx not installed (pip install onnx onnxscript)"]
    assert OnnxUser().check(_no_gpu(), _model(torch=False, onnx="m.onnx")) == []
    assert OnnxUser().check(_no_gpu(), _model(torch=False, onnx=None)) == [
        MESSAGES["no_onnx_source"].format(plugin="test.onnx_user")]


def test_no_builtin_plugin_hand_writes_the_shared_checks():
    plugins, issues = discover()
    assert not issues
    own_checks = sorted(name for name, p in plugins.items() if type(p).check is not Plugin.check)
    # The architecture plugins add one reason of their own: why their transform does not apply to this model;
    # nvidia.torch_compile one too: no Triton compile worker fits in the memory beside its worker.
    assert own_checks == ["architecture.align", "architecture.fold", "architecture.lowrank", "architecture.prune",
                          "architecture.redesign", "nvidia.batching", "nvidia.torch_compile"]


def test_rows_per_call_round_trips_and_old_specs_still_read():
    spec = CandidateSpec(plugin="p", label="fixed 32", dynamic_batch=False, rows_per_call=32)
    assert to_data(spec)["rows_per_call"] == 32
    assert CandidateSpec.from_text(spec.to_text()) == spec
    old = to_data(spec)
    del old["rows_per_call"]
    assert from_data(old, CandidateSpec).rows_per_call is None
    # The oldest specs name only the plugin: the label is the plugin's name, the rest the defaults.
    assert CandidateSpec.from_text('{"plugin": "p"}') == CandidateSpec(plugin="p", label="p")


def test_rows_per_call_must_be_fixed_and_positive():
    with pytest.raises(ValueError, match="dynamic_batch=False"):
        CandidateSpec(plugin="p", label="x", rows_per_call=8)
    with pytest.raises(ValueError, match="at least 1"):
        CandidateSpec(plugin="p", label="x", dynamic_batch=False, rows_per_call=0)
