"""Plugin.describe: every plugin names its candidates in plain words and applies them in its runtime's own API."""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

from cpu_plugin_helpers import fake_hw

from planner.plugins import CandidateSpec, Description, Plugin, Precision, description_of, get_plugin
from targets.architecture.approximate import PrunePlugin
from targets.architecture.exact import AlignPlugin, FoldPlugin
from targets.cpu.openvino import OpenVinoPlugin
from targets.cpu.openvino_int8 import NNCF, NNCF_CONTROLLED, QDQ, OpenVinoInt8Plugin
from targets.cpu.torch_cpu import TorchCpuPlugin, _spec
from targets.edge.int8 import Int8Plugin
from targets.nvidia.batching import batch_spec
from targets.nvidia.fp16 import fp16_spec
from targets.nvidia.torch_compile import compile_spec
from targets.torch_eager import TorchEagerPlugin

# Shorthands a reader should never meet in a title: "2t", "seq", "qdq", "nncf-ac", a config key.
_JARGON = re.compile(r"\b\d+t\b|\bseq\b|qdq|nncf-ac|_|\bfp32\b|\bf32\b|\bbf16\b")


def plain(title: str) -> None:
    """Assert a title reads as words: no abbreviation or config key from the short label."""
    assert title and not _JARGON.search(title), title


def names_resolve(code: str) -> list[str]:
    """Every dotted name a snippet reads from a module it imports, that the installed module lacks ([] when all
    exist); modules not installed here (tensorrt) are left out."""
    tree = ast.parse(code)
    aliases: dict[str, object] = {}
    missing: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if importlib.util.find_spec(alias.name.split(".")[0]) is not None:
                    aliases[alias.asname or alias.name] = importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if importlib.util.find_spec(node.module.split(".")[0]) is not None:
                module = importlib.import_module(node.module)
                missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)]
    for node in ast.walk(tree):
        chain: list[str] = []
        cursor = node
        while isinstance(cursor, ast.Attribute):
            chain.insert(0, cursor.attr)
            cursor = cursor.value
        if chain and isinstance(cursor, ast.Name) and cursor.id in aliases:
            found: object = aliases[cursor.id]
            for part in chain:
                if not hasattr(found, part):
                    missing.append(".".join([cursor.id, *chain]))
                    break
                found = getattr(found, part)
    return missing


def describe(spec: CandidateSpec, inputs=None) -> Description:
    return get_plugin(spec.plugin).describe(spec, inputs)


def test_onnxruntime_titles_and_session_options_run(shared_ctx, monkeypatch) -> None:
    specs = list(get_plugin("cpu.onnxruntime").candidates(shared_ctx))
    monkeypatch.chdir(Path(specs[0].artifacts["onnx"]).parent)  # the snippet names the file as its package does
    titles = {}
    for spec in specs:
        said = describe(spec, shared_ctx.model.inputs)
        plain(said.title)
        assert "ort.SessionOptions()" in said.apply or spec.config.get("defaults")
        assert names_resolve(said.apply) == []
        exec(said.apply, {})  # builds the InferenceSession: every option is one ONNX Runtime accepts
        titles[spec.label] = said.title
    assert titles["onnxruntime defaults"] == "ONNX Runtime, default settings"
    best = next(s for s in specs if s.config.get("intra_op_threads") == 2 and s.config.get("allow_spinning")
                and s.config.get("execution_mode") == "ORT_SEQUENTIAL" and not s.config.get("free_dimensions")
                and s.config.get("graph_optimization_level") == "ORT_ENABLE_ALL")
    assert titles[best.label] == "ONNX Runtime, all graph optimizations, sequential, 2 threads"
    code = describe(best).apply
    assert "so.intra_op_num_threads = 2" in code
    assert 'so.add_session_config_entry("session.intra_op.allow_spinning", "1")' in code


def test_openvino_titles_and_compile_properties_run(shared_ctx, monkeypatch) -> None:
    specs = list(OpenVinoPlugin().candidates(shared_ctx))
    monkeypatch.chdir(Path(specs[0].artifacts["onnx"]).parent)
    static = next(s for s in specs if s.config["static_shape"])
    said = describe(static, shared_ctx.model.inputs)
    assert said.title == "OpenVINO FP32, latency hint, 2 threads, static shape"
    assert '"PERFORMANCE_HINT": "LATENCY"' in said.apply and '"INFERENCE_NUM_THREADS": 2' in said.apply
    assert f"model.reshape({{0: {list(shared_ctx.model.inputs.first.shape)}}})" in said.apply
    for spec in specs:
        said = describe(spec, shared_ctx.model.inputs)
        plain(said.title)
        assert names_resolve(said.apply) == []
        exec(said.apply, {})  # reads, reshapes and compiles the file with exactly these properties


def test_torch_cpu_title_and_calls_run_on_a_module() -> None:
    spec = _spec(2, Precision.FP32, channels_last=True, compile_mode="default", dynamic=True, notes=())
    said = TorchCpuPlugin().describe(spec)
    assert said.title == "PyTorch FP32, channels-last, torch.compile, 2 threads"
    for call in ("torch.set_num_threads(2)", "model.to(memory_format=torch.channels_last)", "torch.compile(model)"):
        assert call in said.apply
    assert names_resolve(said.apply) == []
    eager = TorchCpuPlugin().describe(_spec(2, Precision.BF16, channels_last=True, compile_mode=None, dynamic=True,
                                            notes=()))
    assert eager.title == "PyTorch BF16, channels-last, 2 threads"
    # A fresh interpreter: torch takes its inter-op threads only before any parallel work.
    script = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())\n"
              "x = torch.randn(1, 3, 8, 8)\n" + eager.apply + "\nassert y.shape == (1, 4, 6, 6)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_quantized_candidates_say_how_they_were_made() -> None:
    ort = Int8Plugin()._spec("static", Path("tiny.int8-static.onnx"), 2, False, True, (), calibration_batches=4)
    said = Int8Plugin().describe(ort)
    assert said.title == "ONNX Runtime INT8, static quantization (calibrated, per channel), 2 threads"
    assert "quantize_static(" in said.apply and "QuantFormat.QDQ" in said.apply
    assert 'ort.InferenceSession("tiny.int8-static.onnx"' in said.apply
    ov = OpenVinoInt8Plugin()
    titles = {}
    for source in (NNCF, NNCF_CONTROLLED, QDQ):
        spec = ov._spec(source, Path(f"tiny.{source}.xml"), Precision.FP32, 2, True, (), calibration_batches=4)
        said = ov.describe(spec)
        titles[source] = said.title
        plain(said.title)
        assert "core.compile_model(" in said.apply
        assert names_resolve(said.apply) == []
    assert titles[NNCF] == "OpenVINO INT8 (NNCF post-training), 2 threads"
    assert "nncf.quantize(" in ov.describe(ov._spec(NNCF, Path("m.xml"), Precision.FP32, 2, True, (),
                                                   calibration_batches=4)).apply


def test_gpu_candidates_name_the_gpu_and_their_torch_calls() -> None:
    for spec, title, call in (
            (TorchEagerPlugin().spec("cuda"), "PyTorch eager FP32 on the GPU, default settings", 'model.to("cuda")'),
            (fp16_spec(Precision.FP16, channels_last=True), "PyTorch FP16 on the GPU, channels-last",
             'model.to("cuda", torch.float16)'),
            (compile_spec("reduce-overhead", Precision.FP16), "PyTorch FP16 on the GPU, torch.compile "
             "(reduce-overhead mode)", 'torch.compile(model, mode="reduce-overhead")'),
            (batch_spec(8), "PyTorch FP32 on the GPU, 8 samples per call", "8 samples stacked")):
        said = describe(spec)
        assert said.title == title
        assert call in said.apply
        assert names_resolve(said.apply) == []


def test_architecture_changes_say_what_they_change(tiny) -> None:
    ctx = types.SimpleNamespace(hw=fake_hw(), model=tiny)  # what `spec` reads of a plan context
    spec = FoldPlugin().spec(ctx, {"plugin": FoldPlugin.name}, "fold BatchNorm (exact)", [])
    said = FoldPlugin().describe(spec)
    assert said.title == "BatchNorm folded into the layer before it (exact, no retraining)"
    namespace = {"model": copy.deepcopy(tiny.module)}
    exec(said.apply, namespace)  # torch.fx's fuse folds demo:tiny's bn1 into conv1
    assert not any("BatchNorm" in type(m).__name__ for m in namespace["model"].modules())
    align = AlignPlugin().spec(ctx, {"plugin": AlignPlugin.name, "multiple": 16, "layers": ["conv1"],
                                     "pairs_with": "int8"}, "align channels to 16 for INT8 kernels (exact)", [])
    said = AlignPlugin().describe(align)
    assert said.title.startswith("Conv output channels padded with zeros to a multiple of 16 for INT8 kernels")
    assert all(line.startswith("# ") and len(line) <= 102 for line in said.apply.splitlines())
    prune = PrunePlugin().spec(ctx, {"plugin": PrunePlugin.name, "ratio": 0.125},
                               "prune 12.5% channels (L1) (needs fine-tuning)", [])
    assert PrunePlugin().describe(prune).title == ("Structured pruning: 12.5% of conv channels removed (smallest L1 "
                                                   "norm), needs fine-tuning")


class _Broken(Plugin):
    name = "test.broken"

    def describe(self, spec, inputs=None):
        raise RuntimeError("a third party's slip")


def test_a_plugin_that_cannot_describe_keeps_its_label() -> None:
    spec = CandidateSpec(plugin="test.broken", label="their label")
    assert description_of(_Broken(), spec) == Description("their label")
    assert Plugin().describe(spec) == Description("their label")  # the default: the label, no snippet
