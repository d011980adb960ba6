"""Per-layer facts: FLOPs match FlopCounterMode, bytes and params add up, time is measured per layer."""

from __future__ import annotations

import json

import pytest
import torch
from analysis_models import CleanNet, DecoderNet
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from planner.analysis import analyze_layers
from planner.analysis.stats import median_run
from planner.codec import from_data, to_data
from planner.errors import InputSpecError
from planner.models.demo import DEMOS, InefficientClassifier, UpsamplingClassifier
from planner.results.analysis import LayerRecord


def _flop_counter_total(module: nn.Module, x: torch.Tensor) -> int:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(x)
    return counter.get_total_flops()


def test_single_conv_flops_are_two_per_mac_and_match_flop_counter() -> None:
    conv = nn.Conv2d(4, 6, kernel_size=3, stride=1, padding=0).eval()
    x = torch.randn(1, 4, 10, 10)
    report = analyze_layers(conv, x, measure_time=False)
    (layer,) = report.layers
    hout = wout = 8
    assert layer.flops == 2 * 4 * 6 * 3 * 3 * hout * wout
    assert layer.flops == _flop_counter_total(conv, x) == report.total_flops
    assert layer.output_shape == (1, 6, 8, 8)


def test_single_conv_params_and_bytes_add_up() -> None:
    conv = nn.Conv2d(4, 6, kernel_size=3).eval()
    x = torch.randn(2, 4, 10, 10)
    (layer,) = analyze_layers(conv, x, measure_time=False).layers
    weights = 6 * 4 * 3 * 3 + 6
    assert layer.params == weights
    out_elems = 2 * 6 * 8 * 8
    assert layer.activation_bytes == out_elems * 4
    assert layer.bytes_moved == (x.numel() + weights + out_elems) * 4
    assert layer.intensity == pytest.approx(layer.flops / layer.bytes_moved)


def test_bytes_follow_the_tensors_dtype() -> None:
    lin = nn.Linear(16, 8).double().eval()
    (layer,) = analyze_layers(lin, torch.randn(4, 16, dtype=torch.float64), measure_time=False).layers
    assert layer.bytes_moved == (4 * 16 + 16 * 8 + 8 + 4 * 8) * 8


def test_inefficient_model_totals_add_up() -> None:
    model = InefficientClassifier().eval()
    x = torch.randn(1, 3, 64, 64)
    report = analyze_layers(model, x, measure_time=False)
    assert report.total_flops == _flop_counter_total(model, x)
    assert report.unattributed_flops == 0
    unique_params = {n.name: n.params for n in report.layers}
    assert sum(unique_params.values()) == report.total_params == 1_185_078
    assert report.peak_activation_bytes >= max(n.activation_bytes for n in report.layers)
    assert report.total_bytes_moved == sum(n.bytes_moved for n in report.layers)


def test_a_reused_module_gets_one_entry_per_call_and_the_dataflow_is_recorded() -> None:
    report = analyze_layers(InefficientClassifier().eval(), torch.randn(1, 3, 64, 64),
                            measure_time=False)
    gelu_calls = [n for n in report.layers if n.name == "gelu"]
    assert [n.call for n in gelu_calls] == [1, 2, 3, 4, 5, 6]
    assert len({n.key for n in report.layers}) == len(report.layers)
    by_key = {n.key: n for n in report.layers}
    assert by_key["conv1"].inputs_from == ("<input>",)
    assert by_key["gelu"].inputs_from == ("conv1",)
    assert by_key["bn3a"].inputs_from == ("gelu#3",)
    assert report.output_from == ("classifier",)


def test_interpolate_in_forward_is_a_functional_op_with_shapes_and_bytes() -> None:
    report = analyze_layers(UpsamplingClassifier().eval(), torch.randn(1, 3, 64, 64),
                            measure_time=False)
    (op,) = [op for op in report.functional_ops if op.kind == "interpolate"]
    assert op.name == "<forward>.interpolate"
    assert op.input_shapes == ((1, 3, 64, 64),)
    assert op.output_shape == (1, 3, 224, 224)
    assert op.bytes_moved == (3 * 64 * 64 + 3 * 224 * 224) * 4
    assert op.position == 0
    first_conv = report.layers[0]
    assert first_conv.inputs_from == ("<forward>.interpolate",)
    assert first_conv.input_shapes == ((1, 3, 224, 224),)


def test_timing_gives_every_layer_a_time_and_a_share() -> None:
    before = torch.get_num_threads()
    report = analyze_layers(CleanNet().eval(), torch.randn(1, 3, 32, 32), repeats=3, threads=1)
    assert torch.get_num_threads() == before
    assert report.forward_time_ms is not None and report.forward_time_ms > 0
    assert all(n.time_ms is not None and n.time_ms > 0 for n in report.layers)
    shares = [n.time_share for n in report.layers]
    assert all(s is not None and 0 < s <= 1 for s in shares)
    assert sum(shares) <= 1.0 + 1e-9
    assert "hooks" in report.time_method and "1 thread" in report.time_method


def test_untimed_report_says_so() -> None:
    report = analyze_layers(DecoderNet().eval(), torch.randn(1, 3, 16, 16), measure_time=False)
    assert not report.has_time
    assert report.time_method == "not measured"
    assert all(n.time_ms is None and n.time_share is None for n in report.layers)


def test_each_layer_records_as_results_json_holds_it() -> None:
    demo = DEMOS["tiny"]
    report = analyze_layers(demo.factory().eval(), torch.randn(demo.input_shape), measure_time=False)
    data = json.loads(json.dumps(to_data([layer.record() for layer in report.layers])))
    assert [d["key"] for d in data] == [n.key for n in report.layers]
    assert [d["intensity"] for d in data] == pytest.approx([n.intensity for n in report.layers])
    assert [from_data(d, LayerRecord) for d in data] == [n.record() for n in report.layers]  # and back
    assert {op.name for op in report.functional_ops} == {"<forward>.relu", "<forward>.relu#2"}


def test_wrong_input_shape_is_an_actionable_error() -> None:
    with pytest.raises(InputSpecError, match="input of shape"):
        analyze_layers(CleanNet().eval(), torch.randn(1, 5, 32, 32), measure_time=False)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_layers_are_timed_with_synchronisation() -> None:
    model = CleanNet().eval().cuda()
    x = torch.randn(1, 3, 64, 64, device="cuda")
    report = analyze_layers(model, x, repeats=3)
    assert report.device.startswith("cuda")
    assert "CUDA, synchronized" in report.time_method
    assert all(n.time_ms is not None and n.time_ms > 0 for n in report.layers)
    assert report.total_flops == _flop_counter_total(model, x)


def test_rows_and_forward_come_from_the_one_median_run() -> None:
    # Row-by-row medians of these runs add up to 4 + 5 + 3 = 12 ms against a 9 ms median forward;
    # the one median run's rows always fit inside its own forward.
    runs = [{"a": 4.0, "b": 1.0, "c": 3.0}, {"a": 1.0, "b": 5.0, "c": 3.0}, {"a": 5.0, "b": 5.0, "c": 0.5}]
    totals = [8.5, 9.0, 10.5]
    middle = median_run(totals)
    assert middle == 1 and sum(runs[middle].values()) <= totals[middle]
    assert median_run([3.0, 1.0, 2.0, 4.0]) == 2  # the lower middle of an even count
