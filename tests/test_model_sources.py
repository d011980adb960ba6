"""`planner plan --quick` end to end on a tiny model of every documented source kind: the demo and the ONNX files
here, the other torch sources in test_model_sources_torch.py (apart, so the two halves run on two test workers).

Each plan must write results.json and report.md, measure the baseline, and give every plugin
a row that either measured or says why it could not run; the plan never fails as a whole.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from planner.cli import main

pytestmark = pytest.mark.worker  # every test reads a real `planner plan`, measured in worker processes

PLUGINS = "cpu.onnxruntime"
# Every kind goes through the shared ONNX export (or its own file) into ONNX Runtime; OpenVINO reads the same
# file, so it runs on the ONNX kinds that differ for it (a dynamic batch with its weights in a file beside it, two
# int64 inputs) and on demo:tiny's shared plan. The torch plugin runs on one ONNX file, which it must decline in
# words (an ONNX file has no torch module): its candidates on the program files (.pt2, TorchScript) are run from
# the reloaded file in tests/targets/test_cpu_torch.py, where they take no worker importing PyTorch once more each.
OPENVINO_TOO = {"demo", "onnx-dynamic", "onnx-text"}
TORCH_TOO = {"onnx-dynamic"}


class TinyCnn(nn.Module):
    """A tiny image classifier (16x16 input) that every runtime can take."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


class TinyText(nn.Module):
    """Token ids and an attention mask in, class logits out."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(60, 16)
        self.mix = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask[..., None].to(torch.float32)
        x = torch.relu(self.mix(self.emb(input_ids))) * mask
        return self.head(x.sum(1) / mask.sum(1).clamp(min=1.0))


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, tuple[str, list[str]]]:
    """Model files a user would bring, each with the extra flags its plan needs."""
    root = tmp_path_factory.mktemp("sources")
    torch.manual_seed(0)
    cnn, x = TinyCnn().eval(), torch.randn(1, 3, 16, 16)
    text = TinyText().eval()
    ids, mask = torch.randint(0, 60, (1, 12)), torch.ones(1, 12, dtype=torch.int64)

    static = root / "static.onnx"
    torch.onnx.export(cnn, (x,), str(static), dynamo=False)  # the default: a fixed batch of 1
    dynamic = root / "dynamic.onnx"
    torch.onnx.export(cnn, (x,), str(dynamic), input_names=["pixels"], dynamic_axes={"pixels": {0: "batch"}},
                      dynamo=False)
    # Its weights in a file beside it, as exporters write a model over 2 GB: one plan reads both traits (the
    # static file and the text file keep their weights inside).
    external = root / "external" / "model.onnx"
    external.parent.mkdir()
    import onnx

    onnx.save_model(onnx.load(str(dynamic)), str(external), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    text_onnx = root / "text.onnx"
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(text, (ids, mask), str(text_onnx), input_names=["input_ids", "attention_mask"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes}, dynamo=False)
    pt2 = root / "model.pt2"
    torch.export.save(torch.export.export(cnn, (x,)), str(pt2))
    script = root / "model.pt"
    torch.jit.save(torch.jit.trace(cnn, x), str(script))
    return {
        "demo": ("demo:tiny", []),
        "demo-text": ("demo:text", []),
        "torchvision": ("tv:squeezenet1_1", ["--input-shape", "1x3x64x64"]),
        "onnx-static": (str(static), []),
        "onnx-dynamic": (str(external), []),
        "onnx-text": (str(text_onnx), ["--input", "input_ids:1x12:int64", "--input", "attention_mask:1x12:int64"]),
        "pt2": (str(pt2), []),
        "torchscript": (str(script), ["--input-shape", "1x3x16x16"]),
    }


def plugins_for(kind: str) -> str:
    """The plugins a kind's plan runs."""
    return PLUGINS + (",cpu.openvino" if kind in OPENVINO_TOO else "") + (",cpu.torch" if kind in TORCH_TOO else "")


def _plan(model: str, extra: list[str], out: Path, plugins: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        # Confirming leaders is tested on its own; here it would only repeat measurements.
        # Packages are tested on their own (tests/deploy); writing them here would only time them again.
        # A budget no loaded machine runs out of: these tests read what a plan writes, not what a budget cuts.
        code = main(["plan", "--model", model, *extra, "--target", "cpu", "--quick", "--confirm", "0", "--no-deploy",
                     "--plugins", plugins, "--out", str(out), "--timeout", "120", "--budget", "900"])
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def plan_of(sources, tmp_path_factory, request):
    """Plan a source kind once (cached for the module); returns (results, report text).

    demo:tiny's is the session's shared plan (tests/conftest.py), with the same plugins: its leaders are
    also confirmed, which changes nothing these tests read.
    """
    done: dict[str, tuple[dict, str]] = {}

    def run(kind: str) -> tuple[dict, str]:
        if kind not in done:
            if kind == "demo":
                out, code, said = request.getfixturevalue("tiny_plan")
            else:
                model, extra = sources[kind]
                out = tmp_path_factory.mktemp(kind)
                code, _, said = _plan(model, extra, out, plugins_for(kind))
            assert code == 0, said
            text = (out / "report.md").read_text() + (out / "evidence.md").read_text()
            done[kind] = json.loads((out / "results.json").read_text()), text
        return done[kind]

    return run


def check_plan(kind: str, plan_of) -> None:
    """A source kind's plan: ok, its baseline and inputs reported, every plugin a row or a reason, one that ran."""
    results, report = plan_of(kind)
    assert results["status"] == "ok"
    baseline = results["baseline"]
    assert baseline["latency_ms"]["p50_ms"] > 0
    assert baseline["inputs"] and all(t["name"] in report for t in baseline["inputs"])
    rows = results["candidates"][1:]
    seen = {c["plugin"] for c in rows} | {s["plugin"] for s in results.get("skipped_plugins", [])}
    assert set(plugins_for(kind).split(",")) <= seen, seen
    for c in rows:
        # Unconfirmed: a lower-precision candidate that drifted on the generated inputs (no validation data here).
        # skipped: the quick search did not screen it (predicted to lose, or a slower runtime's other setting).
        assert c["status"] in ("ok", "rejected", "unconfirmed", "failed", "skipped")
        if c["status"] == "failed":
            assert c["reason"], f"{c['label']} failed without a reason"
    assert any(c["status"] == "ok" for c in rows), [(c["label"], c.get("reason")) for c in rows]
    if kind == "demo":
        return  # the session's shared plan, which writes its packages (tests/conftest.py)
    # Planned with --no-deploy: no package, and the report says why rather than guessing.
    assert [d["folder"] for d in results["deployments"]] == [""]
    if "**Ship " in report:  # a plan that keeps the model as it is has nothing to deploy
        assert "no package was written for it: the plan ran with --no-deploy, which writes no package" in report


@pytest.mark.parametrize("kind", ["demo", "onnx-static", "onnx-dynamic", "onnx-text"])
def test_every_source_plans_end_to_end(kind: str, plan_of) -> None:
    check_plan(kind, plan_of)


def test_static_batch_onnx_skips_the_batch_sweep_with_its_reason(plan_of) -> None:
    results, report = plan_of("onnx-static")
    baseline = results["baseline"]
    assert [p["batch"] for p in baseline["throughput"]] == [1]
    assert "fix the batch at 1" in baseline["info"]["sweep_skipped"]
    assert "fix the batch at 1" in report


def test_an_onnx_file_is_measured_against_onnxruntime_defaults(plan_of) -> None:
    results, _ = plan_of("onnx-dynamic")
    cands = results["candidates"]
    base = cands[0]
    assert base["label"] == "onnxruntime defaults (ONNX model)" and base["status"] == "ok"
    assert base["info"]["allow_spinning"] == "default"
    assert any(c["plugin"] == "cpu.openvino" and c["status"] == "ok" for c in cands)
    skipped = {s["plugin"]: s["reasons"][0] for s in results["skipped_plugins"]}
    assert "ONNX-only" in skipped["cpu.torch"]
    # ORT's defaults on the file are the baseline: the ORT plugin does not measure them a second time.
    ort_defaults = [c for c in cands if c["plugin"] == "cpu.onnxruntime" and c["config"] == {"defaults": True}]
    assert len(ort_defaults) == 1
    assert any(c["plugin"] == "cpu.onnxruntime" and c["config"] != {"defaults": True} for c in cands)
    # confirm=0 (`--confirm 0`): the quick screen is ranked as it was measured.
    assert not any(c.get("confirmation") for c in cands)
