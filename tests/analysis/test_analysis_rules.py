"""Advice that fits the evidence and the target: patch embeddings, time-weighted severity, depthwise, overhead."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
import torch
from hardware_profiles import fixture_profile, gpu_server, two_core_x86
from torch import nn

from planner.analysis import Finding, Severity, analyze_layers, lint
from planner.analysis.layers import LayerReport
from planner.analysis.lint import advice_target
from planner.analysis.rules import overhead_bound
from planner.results.analysis import VerdictRecord


class PatchEmbedNet(nn.Module):
    """A ViT-style stem: a 16x16 stride-16 patch embedding, then a linear head on the patch tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 64, kernel_size=16, stride=16)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed patches, average them, classify."""
        return self.head(self.patch(x).flatten(2).mean(dim=2))


class LargeStemNet(nn.Module):
    """A 7x7 stride-2 stem: overlapping windows, a real large kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Convolve, pool, classify."""
        return self.head(self.stem(x).mean(dim=(2, 3)))


class CompactNet(nn.Module):
    """A compact conv body and a 512->1000 classifier that holds most of the parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(64, 512, 1), nn.ReLU())
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Classify."""
        return self.fc(self.body(x).mean(dim=(2, 3)))


class DenseThreeByThree(nn.Module):
    """Wide dense 3x3 convs doing nearly all the FLOPs: the depthwise-separable pattern."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, padding=1)
        self.conv1 = nn.Conv2d(64, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
        self.head = nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Convolve, pool, classify."""
        x = torch.relu(self.conv2(torch.relu(self.conv1(torch.relu(self.stem(x))))))
        return self.head(x.mean(dim=(2, 3)))


def _report(model: nn.Module, shape: tuple[int, ...], times_ms: dict[str, float] | None = None,
            default_ms: float = 0.0) -> tuple[nn.Module, torch.Tensor, LayerReport]:
    """The layer report, with made-up layer times where given (no timed runs: nothing flaky)."""
    model = model.eval()
    x = torch.randn(shape)
    report = analyze_layers(model, x, measure_time=False)
    if times_ms is not None:
        layers = tuple(dataclasses.replace(n, time_ms=times_ms.get(n.name, default_ms)) for n in report.layers)
        report = dataclasses.replace(report, layers=layers,
                                     forward_time_ms=sum(n.time_ms or 0.0 for n in layers))
    return model, x, report


def _lint(model: nn.Module, shape: tuple[int, ...], times_ms: dict[str, float] | None = None, *,
          target: str | None = None) -> dict[str, Finding]:
    model, x, report = _report(model, shape, times_ms)
    return {f.id: f for f in lint(model, x, report, target=target)}


def test_a_patch_embedding_is_not_a_large_kernel() -> None:
    assert "large-kernels" not in _lint(PatchEmbedNet(), (1, 3, 64, 64))
    found = _lint(LargeStemNet(), (1, 3, 64, 64))["large-kernels"]
    assert found.layers == ("stem",)


def test_a_large_kernel_that_takes_little_time_is_low() -> None:
    finding = _lint(LargeStemNet(), (1, 3, 64, 64), {"stem": 0.2, "head": 9.8})["large-kernels"]
    assert finding.severity == Severity.LOW
    assert finding.impact_basis.startswith("share of measured time")
    assert "2% of the measured time" in finding.title


def test_a_classifier_with_most_parameters_but_little_time_is_low_and_about_size() -> None:
    """The issue's case: 512->1000 holds two thirds of the parameters, yet takes a tiny share of time."""
    finding = _lint(CompactNet(), (1, 3, 32, 32), {"body.0": 6.0, "body.2": 3.8, "fc": 0.2})["dense-classifier"]
    assert finding.evidence["param_share"] > 0.5
    assert finding.severity == Severity.LOW
    assert finding.impact == pytest.approx(0.02, abs=1e-3)
    assert "2% of the measured time" in finding.title
    assert "size and memory" in finding.advice and "not its speed" in finding.advice


def test_a_classifier_that_takes_most_of_the_time_is_high() -> None:
    finding = _lint(CompactNet(), (1, 3, 32, 32), {"body.0": 1.0, "body.2": 1.0, "fc": 6.0})["dense-classifier"]
    assert finding.severity == Severity.HIGH
    assert "not its speed" not in finding.advice


def test_without_measured_time_the_classifier_is_judged_by_parameters() -> None:
    finding = _lint(CompactNet(), (1, 3, 32, 32))["dense-classifier"]
    assert finding.severity == Severity.MEDIUM
    assert finding.impact_basis == "share of parameters (layer time not measured)"


def test_depthwise_advice_fits_the_target() -> None:
    cpu = _lint(DenseThreeByThree(), (1, 3, 32, 32), target="cpu")["depthwise-candidates"]
    gpu = _lint(DenseThreeByThree(), (1, 3, 32, 32), target="nvidia")["depthwise-candidates"]
    edge = _lint(DenseThreeByThree(), (1, 3, 32, 32), target="edge")["depthwise-candidates"]
    assert cpu.severity == Severity.MEDIUM and "depthwise 3x3 + pointwise 1x1" in cpu.advice
    assert "GPU" not in cpu.advice and "edge" in edge.advice
    # On a GPU: at most low, with the caveat, and a measurement asked for before any retraining.
    assert gpu.severity == Severity.LOW
    assert gpu.advice.startswith("Measure before retraining")
    assert "dense 3x3 convs often run faster" in gpu.advice
    assert set(gpu.advice_by_target) == {"cpu", "nvidia", "edge"}


def test_an_overhead_bound_model_gets_what_removes_overhead_on_this_target() -> None:
    _, _, report = _report(DenseThreeByThree(), (1, 3, 8, 8))
    verdict = VerdictRecord(bound="overhead", measured_time_s=0.004, compute_time_s=0.0001, memory_time_s=0.0002,
                            overhead_evidence="5 layer calls averaging 0.8 ms each", stable=True)
    gpu = overhead_bound(verdict, report, "nvidia")
    assert gpu is not None and gpu.severity == Severity.HIGH and gpu.category == "runtime"
    assert all(words in gpu.advice for words in ("CUDA graph", "torch.compile", "TensorRT"))
    assert "4 ms measured" in gpu.title and "5 layer calls" in gpu.title
    cpu = overhead_bound(verdict, report, "cpu")
    assert cpu is not None
    assert all(words in cpu.advice for words in ("ONNX Runtime", "OpenVINO", "fuse", "fewer threads", "larger batches"))
    assert gpu.impact == pytest.approx(0.95)
    unstable = overhead_bound(replace(verdict, stable=False), report, "cpu")
    assert unstable is not None and unstable.severity == Severity.MEDIUM
    assert overhead_bound(replace(verdict, bound="compute"), report, "cpu") is None


def test_the_advice_target_follows_the_hardware_the_profile_ran_on() -> None:
    assert advice_target(two_core_x86()) == "cpu"
    assert advice_target(gpu_server(), "cuda") == "nvidia"
    assert advice_target(gpu_server(), "cpu") == "cpu"
    assert advice_target(fixture_profile("rpi4")) == "edge"
    assert advice_target(fixture_profile("jetson_agx_orin"), "cuda") == "edge"
    assert advice_target(None) == "cpu"
