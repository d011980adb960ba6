"""Architecture lint on the demo models and tiny models: the findings a user would act on."""

from __future__ import annotations

import json

import pytest
import torch
from analysis_models import (
    CleanNet,
    DecoderNet,
    DenseHeadNet,
    FunctionalGeluNet,
    UpsampleModuleNet,
)
from torch import nn

from planner.analysis import Finding, Severity, analyze_layers, lint
from planner.codec import to_data
from planner.models.demo import DEMOS, EfficientClassifier, InefficientClassifier

SMALL = (1, 3, 64, 64)


def _lint(model: nn.Module, shape: tuple[int, ...]) -> dict[str, Finding]:
    model = model.eval()
    x = torch.randn(shape)
    findings = lint(model, x, analyze_layers(model, x, measure_time=False))
    assert [f.impact for f in findings] == sorted((f.impact for f in findings), reverse=True)
    return {f.id: f for f in findings}


@pytest.fixture(scope="module")
def inefficient() -> dict[str, Finding]:
    """Lint of the inefficient demo at 64x64 (same structure as 224, cheaper)."""
    torch.manual_seed(0)
    return _lint(InefficientClassifier(), SMALL)


def test_inefficient_large_kernels_lists_the_three_convs(inefficient) -> None:
    f = inefficient["large-kernels"]
    assert f.layers == ("conv1", "conv2", "conv4")
    assert f.evidence["kernel_sizes"] == ["11x11", "7x7", "5x5"]
    assert f.severity == Severity.HIGH
    assert 0.5 < f.impact < 1.0 and f.impact == pytest.approx(f.evidence["flop_share"], abs=1e-4)
    assert not f.exact  # new layers: a redesign to retrain


def test_inefficient_channel_alignment_is_a_finding(inefficient) -> None:
    f = inefficient["channel-alignment"]
    assert "tensor_core_ready" not in f.evidence  # no NVIDIA target: no tensor cores to be ready for
    assert "3->47" in f.evidence["channels"] and "47->83" in f.evidence["channels"]
    assert f.severity == Severity.MEDIUM
    # Impact is the idle-lane share alignment would recover (47->83 pads to 48->88, etc.), small
    # next to the FLOP share of the misaligned layers.
    assert 0.01 < f.impact < 0.15 < f.evidence["fixable_flop_share"]
    assert f.exact  # zero-weight channels compute the same function: no retraining


def test_channel_alignment_speaks_of_tensor_cores_only_for_an_nvidia_gpu(inefficient) -> None:
    cpu = inefficient["channel-alignment"]  # no target: not known to be an NVIDIA GPU
    assert "Tensor-core" not in cpu.title and "tensor cores" not in cpu.advice
    assert cpu.title == "7 layers with channels not divisible by 8"
    # The advice names the layers' channels now and rounded up, not an evidence field.
    assert "suggested_channels" not in cpu.advice and "conv1 3->47 to 3->48" in cpu.advice
    torch.manual_seed(0)
    model, x = InefficientClassifier().eval(), torch.randn(SMALL)
    gpu = {f.id: f for f in lint(model, x, analyze_layers(model, x, measure_time=False), target="nvidia")}
    assert gpu["channel-alignment"].title.startswith("Tensor-core readiness 0/6 conv layers; ")
    assert gpu["channel-alignment"].evidence["tensor_core_ready"] == "0/6"
    assert "tensor cores" in gpu["channel-alignment"].advice


def test_inefficient_gelu_is_an_expensive_activation(inefficient) -> None:
    f = inefficient["expensive-activations"]
    assert f.evidence["types"] == ["GELU"]
    assert f.evidence["calls"] == 6
    assert f.impact_basis == "share of activation memory"


def test_inefficient_has_minimal_downsampling(inefficient) -> None:
    f = inefficient["late-downsampling"]
    assert f.evidence["convs_at_stem_resolution"] == "5/5"
    assert f.evidence["last_conv_side_ratio"] == 0.5
    assert f.evidence["stride1_pools"] == 1
    assert "pool1" in f.layers
    assert f.severity == Severity.HIGH


def test_inefficient_bn_after_gelu_cannot_be_folded(inefficient) -> None:
    f = inefficient["unfused-conv-bn"]
    assert f.evidence["chains"] == ["Conv2d->GELU->BatchNorm2d"] * 2
    assert f.evidence["not_foldable"] == 2 and f.evidence["foldable"] == 0
    assert "cannot be folded" in f.evidence["not_foldable_reason"]
    assert not f.exact  # moving BatchNorm across the GELU needs fine-tuning
    assert {"bn3a", "bn3b", "conv3a", "conv3b"} <= set(f.layers)


def test_efficient_has_only_its_stem_misaligned_and_no_large_kernels() -> None:
    findings = _lint(EfficientClassifier(), SMALL)
    assert "large-kernels" not in findings
    assert "late-downsampling" not in findings
    assert "expensive-activations" not in findings
    f = findings["channel-alignment"]
    assert "tensor_core_ready" not in f.evidence and "9/10" not in f.title
    # The only misaligned conv is the stem reading the 3-channel image: nothing to fix.
    assert f.evidence["fixed_by_model_io"] == [True]
    assert f.severity == Severity.INFO
    assert findings["unfused-conv-bn"].evidence["foldable"] == 10
    assert findings["unfused-conv-bn"].exact  # folding computes the same function: no retraining


def test_upsampling_demo_ranks_input_upsampling_first() -> None:
    demo = DEMOS["upsampling"]
    model = demo.factory().eval()
    x = torch.randn(demo.input_shape)
    findings = lint(model, x, analyze_layers(model, x, measure_time=False))
    first = findings[0]
    assert first.id == "input-upsampling"
    assert first.evidence["pixel_factor"] == pytest.approx(12.25)
    assert (first.evidence["from"], first.evidence["to"]) == ("64x64", "224x224")
    assert first.impact == pytest.approx(1 - 1 / 12.25, abs=0.01)
    assert first.severity == Severity.HIGH


def test_upsample_module_on_the_input_is_found_but_a_decoder_upsample_is_not() -> None:
    f = _lint(UpsampleModuleNet(), (1, 3, 16, 16))["input-upsampling"]
    assert f.layers == ("resize",)
    assert f.evidence["pixel_factor"] == pytest.approx(4.0)
    assert "input-upsampling" not in _lint(DecoderNet(), (1, 3, 16, 16))


def test_a_dominating_linear_is_a_dense_classifier() -> None:
    f = _lint(DenseHeadNet(), (1, 3, 32, 32))["dense-classifier"]
    assert f.layers == ("fc",)
    assert f.evidence["param_share"] > 0.9
    assert f.evidence["est_low_rank_params"] < f.evidence["params"]
    assert "dense-classifier" not in _lint(CleanNet(), (1, 3, 64, 64))


def test_functional_gelu_counts_as_an_expensive_activation() -> None:
    f = _lint(FunctionalGeluNet(), (1, 3, 32, 32))["expensive-activations"]
    assert f.evidence["types"] == ["F.gelu"]
    assert f.layers == ("<forward>.gelu",)


def test_a_clean_model_has_no_high_severity_findings() -> None:
    findings = _lint(CleanNet(), (1, 3, 64, 64))
    assert not [f for f in findings.values() if f.severity == Severity.HIGH]
    for rule in ("large-kernels", "late-downsampling", "expensive-activations", "input-upsampling",
                 "unfused-conv-bn"):
        assert rule not in findings


class _Renamed(nn.Module):
    """InefficientClassifier with every module renamed, some misleadingly (the GELU is "relu")."""

    def __init__(self) -> None:
        super().__init__()
        self.foo1 = nn.Conv2d(3, 47, kernel_size=11, stride=2, padding=5)
        self.bar2 = nn.Conv2d(47, 83, kernel_size=7, stride=1, padding=3)
        self.relu = nn.GELU()
        self.depthwise3 = nn.Conv2d(83, 127, kernel_size=3, padding=1)
        self.qux4 = nn.BatchNorm2d(127)
        self.fused5 = nn.Conv2d(127, 131, kernel_size=3, padding=1)
        self.norm_free6 = nn.BatchNorm2d(131)
        self.downsample7 = nn.MaxPool2d(3, stride=1, padding=1)
        self.tiny3x3 = nn.Conv2d(131, 193, kernel_size=5, padding=2)
        self.zap9 = nn.Conv2d(193, 251, kernel_size=1)
        self.zip10 = nn.AdaptiveAvgPool2d(1)
        self.embedding = nn.Linear(251, 200)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same computation as InefficientClassifier.forward."""
        x = self.relu(self.foo1(x))
        x = self.relu(self.bar2(x))
        x = self.qux4(self.relu(self.depthwise3(x)))
        x = self.downsample7(x)
        x = self.norm_free6(self.relu(self.fused5(x)))
        x = self.relu(self.tiny3x3(x))
        x = self.relu(self.zap9(x))
        x = self.zip10(x)
        return self.embedding(torch.flatten(x, 1))


def test_findings_do_not_depend_on_module_names(inefficient) -> None:
    renamed = _lint(_Renamed(), SMALL)

    def facts(findings: dict[str, Finding]) -> list[tuple]:
        return [(f.id, f.severity, round(f.impact, 9), json.dumps(f.evidence, sort_keys=True),
                 f.title, len(f.layers)) for f in findings.values()]

    assert facts(renamed) == facts(inefficient)
    assert renamed["large-kernels"].layers == ("foo1", "bar2", "tiny3x3")


def test_findings_serialise_to_json(inefficient) -> None:
    data = json.loads(json.dumps([to_data(f) for f in inefficient.values()]))
    assert {d["severity"] for d in data} <= {"high", "medium", "low", "info"}
    assert all(0.0 <= d["impact"] <= 1.0 and d["impact_basis"] and d["advice"] for d in data)
