"""planner.onnx.export: dynamic-batch ONNX export, clear failures, and the per-plan shared export."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from cpu_plugin_helpers import fake_hw, torch_output

import planner.onnx.export as export_mod
from planner.errors import PlannerError, failure_reason
from planner.models import load_model
from planner.models.loaded import make_feeds
from planner.onnx.export import ExportError, ExportResult, export_onnx, shared_onnx
from planner.plugins import PlanContext


@torch.library.custom_op("plannertest::mystery", mutates_args=())
def _mystery(x: torch.Tensor) -> torch.Tensor:
    """A custom op with no ONNX translation in any exporter."""
    return x * 2


@_mystery.register_fake
def _mystery_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class CustomOpNet(torch.nn.Module):
    """A model no exporter can handle: its forward calls an op ONNX has no function for."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Double the input through the custom op."""
        return _mystery(x) + 1


class BatchOneNet(torch.nn.Module):
    """A model that only accepts batch 1, so a symbolic batch axis cannot be exported."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Flatten a single sample."""
        torch._check(x.shape[0] == 1)
        return x.reshape(1, -1).sum(dim=1, keepdim=True)


def _with_module(model, module):
    return dataclasses.replace(model, module=module.eval())


@pytest.fixture(scope="module")
def exported(tiny, tmp_path_factory) -> ExportResult:
    """demo:tiny exported once for this module."""
    return export_onnx(tiny, Path(tmp_path_factory.mktemp("export")) / "tiny.onnx")


def test_dynamic_batch_export_runs_in_ort_and_matches_torch(tiny, exported) -> None:
    import onnxruntime as ort

    assert exported.exporter == "torch.export"
    assert exported.dynamic_batch
    assert exported.path.is_file()
    onnx.checker.check_model(str(exported.path))
    session = ort.InferenceSession(str(exported.path), providers=["CPUExecutionProvider"])
    assert tuple(i.name for i in session.get_inputs()) == exported.input_names == ("x",)
    for batch in (1, 4):
        feed = tiny.make_feeds(batch=batch, seed=11)[0]
        got = session.run(None, feed)[0]
        assert got.shape == (batch, 10)
        np.testing.assert_allclose(got, torch_output(tiny, feed), rtol=1e-4, atol=1e-5)


def test_text_model_exports_both_int64_inputs_with_dynamic_batch_and_sequence(text, text_ctx) -> None:
    import onnxruntime as ort

    exported = shared_onnx(text_ctx)
    assert exported.input_names == ("input_ids", "attention_mask")
    assert exported.dynamic_batch
    proto = onnx.load(str(exported.path), load_external_data=False)
    for value in proto.graph.input:
        assert value.type.tensor_type.elem_type == onnx.TensorProto.INT64, value.name
        assert [d.dim_param for d in value.type.tensor_type.shape.dim] == ["batch", "sequence"]
    session = ort.InferenceSession(str(exported.path), providers=["CPUExecutionProvider"])
    for inputs in (text.inputs.with_batch(3), text.inputs.with_sequence(16)):
        feed = make_feeds(inputs, seed=11)[0]
        got = session.run(None, feed)[0]
        assert got.shape == (inputs.batch, 4)
        np.testing.assert_allclose(got, torch_output(text, feed), rtol=1e-4, atol=1e-5)


def test_weights_live_inside_the_onnx_file(exported) -> None:
    proto = onnx.load(str(exported.path), load_external_data=False)
    assert proto.graph.initializer, "the export should carry its weights as initializers"
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)
    assert not list(exported.path.parent.glob("*.data"))


def test_unexportable_op_raises_export_error_naming_it(tiny, tmp_path) -> None:
    model = _with_module(tiny, CustomOpNet())
    with pytest.raises(ExportError) as info:
        export_onnx(model, tmp_path / "custom.onnx")
    err = info.value
    assert isinstance(err, PlannerError)
    assert str(err).startswith("ONNX export failed: unsupported op plannertest::mystery")
    titles = [title for title, _ in err.attempts]
    assert titles == ["torch.export, dynamic batch", "torch.export, static shapes",
                      "TorchScript, dynamic batch"]
    assert all("plannertest::mystery" in reason for _, reason in err.attempts)


def test_batch_one_model_exports_with_a_fixed_batch(tiny, tmp_path) -> None:
    model = _with_module(tiny, BatchOneNet())
    result = export_onnx(model, tmp_path / "b1.onnx")
    assert not result.dynamic_batch
    assert "the exported graph has a fixed batch size" in result.warnings


def test_a_failed_dynamic_export_is_retried_with_a_static_batch(tiny, tmp_path, monkeypatch) -> None:
    real = export_mod._run_exporter
    seen = []

    def flaky(model, path, *, exporter, dynamic, **kwargs):
        seen.append((exporter, dynamic))
        if dynamic:
            raise RuntimeError("Constraints violated (batch)! the batch axis was specialized")
        return real(model, path, exporter=exporter, dynamic=dynamic, **kwargs)

    monkeypatch.setattr(export_mod, "_run_exporter", flaky)
    result = export_onnx(tiny, tmp_path / "static.onnx")
    assert seen == [("torch.export", ("batch",)), ("torch.export", ())]
    assert result.exporter == "torch.export"
    assert not result.dynamic_batch
    assert any("torch.export, dynamic batch: RuntimeError: Constraints violated" in w
               for w in result.warnings)


def test_onnx_source_model_returns_its_own_path(exported) -> None:
    onnx_model = load_model(str(exported.path))
    result = export_onnx(onnx_model, Path("/nonexistent/never-written.onnx"))
    assert result.exporter == "source"
    assert result.path == onnx_model.onnx_path
    assert result.dynamic_batch


def test_shared_onnx_exports_once_per_plan(tiny, tmp_path, monkeypatch) -> None:
    calls = []
    real = export_mod.export_onnx

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(export_mod, "export_onnx", counting)
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path)
    first = shared_onnx(ctx)
    second = shared_onnx(ctx)
    assert first is second
    assert len(calls) == 1
    assert first.path.is_relative_to(tmp_path)


def test_shared_onnx_caches_the_failure_too(tiny, tmp_path, monkeypatch) -> None:
    calls = []

    def failing(*args, **kwargs):
        calls.append(args)
        raise ExportError("ONNX export failed: unsupported op aten::xyz")

    monkeypatch.setattr(export_mod, "export_onnx", failing)
    ctx = PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path)
    with pytest.raises(ExportError, match="aten::xyz"):
        shared_onnx(ctx)
    with pytest.raises(ExportError, match="aten::xyz"):
        shared_onnx(ctx)
    assert len(calls) == 1


def test_failure_reason_reads_the_exporters_messages() -> None:
    dynamo = RuntimeError(
        "Failed to convert the exported program to an ONNX model. \x1b[96mThis is step 3/3\x1b[0m\n"
        "\n## Exception summary\n\n<class 'torch.onnx._internal.exporter._errors.DispatchError'>: "
        "No ONNX function found for <OpOverload(op='aten.xyz', overload='default')>. Failure")
    assert failure_reason(dynamo) == "unsupported op aten::xyz"
    legacy = RuntimeError("Exporting the operator 'aten::fft_rfft2' to ONNX opset version 17 "
                          "is not supported. Please feel free to request support")
    assert failure_reason(legacy) == "unsupported op aten::fft_rfft2"
    guard = RuntimeError("Failed to export the model with torch.export.\n\n## Exception summary\n\n"
                         "<class 'torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode'>: "
                         "Could not guard on data-dependent expression Eq(u0, 1)\nmore")
    assert failure_reason(guard) == ("GuardOnDataDependentSymNode: Could not guard on "
                                     "data-dependent expression Eq(u0, 1)")
    assert failure_reason(ValueError("")) == "ValueError"


def test_modules_import_no_heavy_runtime() -> None:
    code = ("import sys, planner.onnx.export, targets.cpu.torch_cpu, targets.cpu.onnxruntime, "
            "targets.cpu.openvino; print(sorted(m for m in ('torch', 'onnx', 'onnxruntime', "
            "'openvino', 'textual') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_batch_of_one_is_not_baked_into_a_dynamic_export(tmp_path) -> None:
    """A transformer layer traced at batch 1 came out with batch fixed at 1; the export keeps it dynamic."""
    source = tmp_path / "encoder.py"
    source.write_text(
        "import torch\n"
        "class Encoder(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = torch.nn.Embedding(100, 16)\n"
        "        self.layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)\n"
        "    def forward(self, input_ids):\n"
        "        return self.layer(self.emb(input_ids)).mean(1)\n"
        "def make():\n"
        "    return Encoder()\n")
    model = load_model(f"{source}:make", trust_code=True, inputs=["input_ids:1x12:int64"])
    result = export_onnx(model, tmp_path / "encoder.onnx")
    assert result.dynamic_batch, result.warnings
    dims = onnx.load(str(result.path)).graph.input[0].type.tensor_type.shape.dim
    assert not dims[0].HasField("dim_value") and not dims[1].HasField("dim_value")
