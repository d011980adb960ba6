"""Predictions before measuring: the speedup band each plugin expects of a candidate on this hardware."""

from __future__ import annotations

from hardware_profiles import without_features

from planner.advice.predict import summary, verdict
from planner.plugins import CandidateSpec, Precision, get_plugin
from planner.plugins.expectation import grouped_conv_share
from planner.results.values import Prediction


def predict(plugin: str, precision: str, config: dict, hw, baseline: dict, *,
            baseline_fuses: bool = False) -> Prediction:
    """What the named plugin expects of one of its candidates (its declared `expect`)."""
    spec = CandidateSpec(plugin=plugin, config=config, precision=Precision(precision))
    return get_plugin(plugin).expect(spec, hw, baseline, baseline_fuses=baseline_fuses)


def _depthwise(baseline: dict) -> dict:
    """The same profile with most of the time in a depthwise conv (weights per output channel < inputs)."""
    baseline["layers"] = [
        {"name": "dw", "type": "Conv2d", "time_ms": 8.0, "params": 96 * 9, "input_shapes": [[1, 96, 56, 56]],
         "output_shape": [1, 96, 56, 56]},
        {"name": "pw", "type": "Conv2d", "time_ms": 2.0, "params": 96 * 96, "input_shapes": [[1, 96, 56, 56]],
         "output_shape": [1, 96, 56, 56]},
    ]
    return baseline


def test_int8_pays_on_vnni_when_compute_bound(cpu_server, make_baseline) -> None:
    p = predict("edge.int8", "int8", {"mode": "static"}, cpu_server, make_baseline(bound="compute"))
    assert p.low is not None and p.low >= 1.5 and "AVX-512 VNNI" in p.basis


def test_int8_without_vnni_is_predicted_not_to_pay(cpu_server, make_baseline) -> None:
    plain = without_features(cpu_server, "avx512_vnni")
    p = predict("edge.int8", "int8", {"mode": "static"}, plain, make_baseline())
    assert p.high is not None and p.high <= 1.1 and "no INT8 dot-product" in p.basis


def test_int8_loses_on_a_depthwise_model(cpu_server, make_baseline) -> None:
    baseline = _depthwise(make_baseline())
    assert grouped_conv_share(baseline) == 0.8
    p = predict("cpu.openvino_int8", "int8", {}, cpu_server, baseline)
    assert p.high is not None and p.high <= 1.2 and "depthwise" in p.basis


def test_int8_on_an_attention_model_says_why(cpu_server, make_baseline) -> None:
    baseline = make_baseline()
    baseline["inputs"] = [{"name": "input_ids", "axes": ["batch", "sequence"], "shape": [1, 128], "dtype": "int64"}]
    p = predict("edge.int8", "int8", {"mode": "static"}, cpu_server, baseline)
    assert "attention" in p.basis


def test_bf16_needs_native_units(cpu_server, big_cpu_server, make_baseline) -> None:
    emulated = predict("cpu.torch", "bf16", {}, cpu_server, make_baseline())
    native = predict("cpu.torch", "bf16", {}, big_cpu_server, make_baseline(bound="compute"))
    assert emulated.high is not None and emulated.high <= 1.0 and "emulated" in emulated.basis
    assert native.low is not None and native.low > 1.0 and "native bf16" in native.basis


def test_dynamic_int8_and_throughput_hint_are_unlikely_to_pay(cpu_server, make_baseline) -> None:
    dynamic = predict("edge.int8", "int8", {"mode": "dynamic"}, cpu_server, make_baseline())
    streams = predict("cpu.openvino", "fp32", {"hint": "THROUGHPUT"}, cpu_server, make_baseline())
    assert dynamic.family == "int8-dynamic" and streams.family == "throughput-hint"
    assert streams.high == 1.0


def test_verdict_and_summary_count_the_hits() -> None:
    band = Prediction(1.0, 2.0, "x")
    loser = Prediction(0.3, 1.0, "y")
    assert [verdict(band, m) for m in (0.5, 1.5, 3.0, None)] == ["below", "inside", "above", ""]
    text = summary([(band, 1.5), (band, 3.0), (loser, 0.7), (None, 2.0)])
    assert text.startswith("2 of 3 measured speedups fell inside their predicted band")
    assert "1 of 1 'unlikely to pay' predictions were right" in text


def _with_ceiling(baseline: dict, *, p50: float, peak: float = 100e9) -> dict:
    """The profile with a measured fp32 peak and a p50: 3.6 GFLOP per call at `p50` ms."""
    baseline["latency_ms"]["p50_ms"] = p50
    baseline["ceilings"] = {"peak_flops": {"fp32": peak}}
    return baseline


def test_a_runtime_switch_gains_what_the_baseline_leaves_below_the_peak(cpu_server, make_baseline) -> None:
    # 3.6 GFLOP in 300 ms is 12% of a 100 GFLOP/s peak: fusion and better kernels can gain up to ~8x.
    slow = predict("cpu.openvino", "fp32", {"hint": "LATENCY"}, cpu_server, _with_ceiling(make_baseline(), p50=300))
    assert slow.family == "runtime" and slow.low == 1.0 and slow.high == 8.3
    assert "reaches 12% of the measured fp32 peak" in slow.basis
    # A baseline already at 90% of the peak: the same switch is a wash at best.
    fast = predict("cpu.openvino", "fp32", {"hint": "LATENCY"}, cpu_server, _with_ceiling(make_baseline(), p50=40))
    assert fast.low == 0.8 and fast.high == 2.0
    # Torch plugins keep the baseline's runtime: no runtime gain in their band.
    torch = predict("cpu.torch", "fp32", {}, cpu_server, _with_ceiling(make_baseline(), p50=300))
    assert "measured fp32 peak" not in torch.basis


def test_a_precision_change_on_a_fusing_runtime_compounds_with_the_switch(cpu_server, make_baseline) -> None:
    baseline = _with_ceiling(make_baseline(bound="compute"), p50=300)
    int8 = predict("cpu.openvino_int8", "int8", {"quantization": "nncf"}, cpu_server, baseline)
    alone = predict("cpu.openvino_int8", "int8", {}, cpu_server, make_baseline(bound="compute"))
    assert alone.low is not None and alone.high is not None
    assert int8.low == alone.low * 1.0 and int8.high == round(alone.high * 8.3, 1)
    assert "AVX-512 VNNI" in int8.basis and "on top of the runtime switch" in int8.basis
    # An ONNX model's baseline already runs in ONNX Runtime: no switch to compound.
    assert predict("cpu.openvino_int8", "int8", {}, cpu_server, baseline, baseline_fuses=True).high == alone.high


def test_architecture_transforms_have_their_own_bands(cpu_server, make_baseline) -> None:
    exact = predict("architecture.fold", "fp32", {"architecture": "exact"}, cpu_server, make_baseline())
    pruned = predict("architecture.prune", "fp32", {"architecture": "approximate"}, cpu_server, make_baseline())
    assert exact.family == "architecture-exact" and (exact.low, exact.high) == (0.9, 1.2)
    assert pruned.family == "architecture-approximate" and "share of the time" in pruned.basis
