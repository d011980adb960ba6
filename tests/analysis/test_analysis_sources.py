"""Models from every source: two-input text models, TorchScript (profiled per op) and torch.export graphs."""

from __future__ import annotations

import warnings

import pytest
import torch
from analysis_models import CleanNet, TinyTextNet
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from planner.analysis import Dataflow, analyze_layers, lint
from planner.analysis.layers import INPUT_NODE
from planner.errors import InputSpecError
from planner.models.demo import InefficientClassifier


def _flops(module: nn.Module, *args: torch.Tensor) -> int:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(*args)
    return counter.get_total_flops()


def _text_inputs(batch: int = 2, length: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, 50, (batch, length), dtype=torch.int64)
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[1, 5:] = 0
    return ids, mask


def _script(module: nn.Module, *args: torch.Tensor, trace: bool = False) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated, but users still ship it
        return torch.jit.trace(module, args) if trace else torch.jit.script(module)


# --- two int64 inputs, ordinary module (hooks) -------------------------------------------------


def test_a_two_input_text_model_is_analysed_layer_by_layer() -> None:
    model = TinyTextNet().eval()
    ids, mask = _text_inputs()
    report = analyze_layers(model, (ids, mask), measure_time=False)
    assert [n.key for n in report.layers] == ["embed", "fc1", "act", "fc2"]
    assert report.total_flops == _flops(model, ids, mask) > 0
    assert report.unattributed_flops == 0
    assert report.input_shape == (2, 8)
    assert report.input_shapes == ((2, 8), (2, 8))
    assert report.input_dtypes == ("int64", "int64")
    assert report.notes == ()
    by_key = {n.key: n for n in report.layers}
    assert by_key["embed"].inputs_from == (INPUT_NODE,)
    # The mask is an input too: the op that casts it reads from the same input node.
    cast = next(op for op in report.functional_ops if op.input_shapes == ((2, 8),))
    assert cast.inputs_from == (INPUT_NODE,)
    assert report.output_from == ("fc2",)


def test_an_embedding_is_charged_the_rows_it_gathers_not_the_table() -> None:
    model = TinyTextNet(vocab=10_000).eval()
    ids, mask = _text_inputs()
    embed = analyze_layers(model, (ids, mask), measure_time=False).layers[0]
    out = 2 * 8 * 16 * 4
    assert embed.params == 10_000 * 16
    assert embed.bytes_moved == ids.numel() * 8 + out + out  # ids, gathered rows, output
    assert embed.bytes_moved < 10_000 * 16 * 4


def test_a_text_model_is_timed_and_linted_without_image_rules() -> None:
    model = TinyTextNet().eval()
    args = _text_inputs()
    report = analyze_layers(model, args, repeats=2, threads=1)
    assert all(n.time_ms is not None and n.time_ms > 0 for n in report.layers)
    assert "hooks" in report.time_method
    found = {f.id for f in lint(model, args, report)}
    assert not found & {"expensive-activations", "late-downsampling", "input-upsampling", "large-kernels"}


def test_a_failing_forward_names_the_inputs_it_was_given() -> None:
    model = TinyTextNet().eval()
    ids, _ = _text_inputs()
    with pytest.raises(InputSpecError, match=r"input of shape \(2, 8\) \(int64\)") as caught:
        analyze_layers(model, ids, measure_time=False)
    assert "1x3x224x224" not in str(caught.value)
    too_big = torch.full((1, 4), 999, dtype=torch.int64)
    with pytest.raises(InputSpecError, match=r"2 inputs .*\(1, 4\) int64, \(1, 4\) int64"):
        analyze_layers(model, (too_big, torch.ones(1, 4, dtype=torch.int64)), measure_time=False)


# --- TorchScript: no hooks, torch.profiler per op ----------------------------------------------


@pytest.fixture(scope="module")
def scripted_clean() -> tuple[nn.Module, torch.Tensor, object]:
    """CleanNet, its input and the report of its torch.jit.script form."""
    torch.manual_seed(0)
    model = CleanNet().eval()
    x = torch.randn(1, 3, 32, 32)
    return model, x, analyze_layers(_script(model), x, repeats=3, hooks=False)


def test_torchscript_rows_are_the_graphs_ops_with_their_flops(scripted_clean) -> None:
    model, x, report = scripted_clean
    assert [n.key for n in report.layers] == [
        "aten::conv2d", "aten::relu", "aten::conv2d#2", "aten::relu#2", "aten::conv2d#3", "aten::relu#3",
        "aten::conv2d#4", "aten::relu#4", "aten::adaptive_avg_pool2d", "aten::linear"]
    assert all(n.type == n.name for n in report.layers)
    assert report.total_flops == _flops(model, x) > 0
    assert report.unattributed_flops == 0
    eager = analyze_layers(model, x, measure_time=False)
    convs = [n for n in report.layers if n.name == "aten::conv2d"]
    assert [n.flops for n in convs] == [n.flops for n in eager.layers if n.type == "Conv2d"]
    assert [n.params for n in convs] == [n.params for n in eager.layers if n.type == "Conv2d"]
    assert [n.output_shape for n in convs] == [n.output_shape for n in eager.layers if n.type == "Conv2d"]
    assert report.total_params == eager.total_params


def test_torchscript_rows_are_timed_by_the_profiler_and_say_so(scripted_clean) -> None:
    _, _, report = scripted_clean
    assert report.time_method.startswith("torch.profiler per-op CPU time")
    assert "median of 3 runs" in report.time_method
    assert report.forward_time_ms is not None and report.forward_time_ms > 0
    assert all(n.time_ms is not None and n.time_ms > 0 for n in report.layers)
    assert sum(n.time_share or 0.0 for n in report.layers) <= 1.0 + 1e-9
    assert any("TorchScript" in note and "torch.profiler" in note for note in report.notes)


def test_torchscript_rows_keep_the_dataflow(scripted_clean) -> None:
    _, _, report = scripted_clean
    flow = Dataflow(report)
    assert report.layers[0].inputs_from == (INPUT_NODE,)
    assert flow.producers("aten::relu") == ("aten::conv2d",)
    assert report.output_from == ("aten::linear",)


def test_a_torchscript_module_is_profiled_even_when_hooks_are_asked_for() -> None:
    model = TinyTextNet().eval()
    args = _text_inputs()
    traced = _script(model, *args, trace=True)
    report = analyze_layers(traced, args, measure_time=False)
    assert report.total_flops == _flops(model, *args) > 0
    assert report.unattributed_flops == 0
    names = [n.name for n in report.layers]
    assert names[0] == "aten::embedding" and names.count("aten::linear") == 2
    assert report.time_method == "not measured"
    assert any("TorchScript" in note for note in report.notes)
    assert lint(traced, args, report) == []


def test_hooks_off_on_an_eager_module_profiles_it_and_notes_why() -> None:
    model = TinyTextNet().eval()
    args = _text_inputs()
    report = analyze_layers(model, args, repeats=2, hooks=False)
    assert report.total_flops == _flops(model, *args)
    assert "torch.profiler" in report.time_method
    assert any("hooks=False" in note for note in report.notes)


# --- torch.export graphs: layers rebuilt from nn_module_stack -----------------------------------


def test_an_exported_graph_gets_the_eager_models_layers() -> None:
    model = CleanNet().eval()
    x = torch.randn(1, 3, 32, 32)
    graph = torch.export.export(model, (x,)).module()
    report = analyze_layers(graph, x, repeats=2)
    eager = analyze_layers(model, x, measure_time=False)
    assert [(n.key, n.type) for n in report.layers] == [(n.key, n.type) for n in eager.layers]
    assert [n.flops for n in report.layers] == [n.flops for n in eager.layers]
    assert [n.params for n in report.layers] == [n.params for n in eager.layers]
    assert [n.inputs_from for n in report.layers] == [n.inputs_from for n in eager.layers]
    assert report.total_flops == _flops(model, x) > 0 and report.unattributed_flops == 0
    assert "torch.fx.Interpreter" in report.time_method and "nn_module_stack" in report.time_method
    assert all(n.time_ms is not None and n.time_ms > 0 for n in report.layers)
    assert any("torch.export" in note for note in report.notes)


def test_an_exported_text_model_counts_reused_calls_and_both_inputs() -> None:
    model = TinyTextNet().eval()
    args = _text_inputs()
    graph = torch.export.export(model, args).module()
    report = analyze_layers(graph, args, measure_time=False)
    assert [n.key for n in report.layers] == ["embed", "fc1", "act", "fc2"]
    assert report.total_flops == _flops(model, *args)
    assert report.input_dtypes == ("int64", "int64")
    assert [f.id for f in lint(graph, args, report)] == [f.id for f in lint(model, args)]
    with pytest.raises(InputSpecError, match="takes 2 input tensors, 1 given"):
        analyze_layers(graph, args[0], measure_time=False)
    reused = analyze_layers(torch.export.export(InefficientClassifier().eval(), (torch.randn(1, 3, 32, 32),))
                            .module(), torch.randn(1, 3, 32, 32), measure_time=False)
    assert [n.call for n in reused.layers if n.name == "gelu"] == [1, 2, 3, 4, 5, 6]


def test_an_exported_bare_layer_is_its_own_only_layer() -> None:
    conv = nn.Conv2d(4, 8, 3).eval()
    x = torch.randn(1, 4, 10, 10)
    (layer,) = analyze_layers(torch.export.export(conv, (x,)).module(), x, measure_time=False).layers
    (eager,) = analyze_layers(conv, x, measure_time=False).layers
    assert (layer.name, layer.type, layer.flops, layer.bytes_moved) == ("", "Conv2d", eager.flops, eager.bytes_moved)


def test_an_exported_graph_gets_the_same_findings_as_the_eager_model() -> None:
    torch.manual_seed(0)
    model = InefficientClassifier().eval()
    x = torch.randn(1, 3, 64, 64)
    eager = lint(model, x)
    exported = lint(torch.export.export(model, (x,)).module(), x)
    assert [(f.id, f.severity, f.layers) for f in exported] == [(f.id, f.severity, f.layers) for f in eager]
    assert [f.impact for f in exported] == pytest.approx([f.impact for f in eager], rel=1e-3)
