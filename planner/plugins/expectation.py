"""What a candidate family is likely to gain before it is measured: the speedup band and its reason,
from the hardware, the run's measured ceilings and the baseline's analysis.

A lower precision on the CPU follows what this machine measured: where the run's ceilings (the
baseline's `ceilings`, measured before any candidate) hold both its GEMM peak and fp32's, the band
follows their ratio, so bf16 is predicted slower where bf16 measured slower, whatever the ISA flags
say. Only where no such figure exists do the method's rules of thumb from the ISA flags stand, and
the basis says so. A plugin's `expect` uses these through its declared family (`prediction_family`)
and whether it fuses the graph (`fuses_graph`); a plugin with its own knowledge overrides `expect`.
Nothing is timed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from planner import units
from planner.hardware.ceiling_notes import slower_note
from planner.hardware.profile import BF16_FEATURES, FP16_FEATURES, INT8_DOT_FEATURES
from planner.results.values import Prediction
from planner.results.view import as_list, bottleneck, dig, number

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

GROUPED_SHARE_HIGH = 0.3
"""Above this share of layer time in depthwise/grouped convs, INT8 is not expected to pay on CPU."""

FUSED_EFFICIENCY = 1.0
"""The share of the measured fp32 peak a fusing runtime (ONNX Runtime, OpenVINO) can reach on a whole model.

Measured runs reach 0.5-1.2 of a peak timed with one large matmul; 1.0 bounds what a runtime switch can
gain over a baseline that reaches less."""

LOW_EFFICIENCY = 0.25
"""Below this share of the fp32 peak the baseline is wasting time a fused runtime recovers: expect >= 1x."""

# Families whose band does not depend on the hardware or the profile: (low, high, why).
_FIXED_BANDS: dict[str, tuple[float, float, str]] = {
    "ternary": (0.5, 3.0, "2-bit weights read by ONNX Runtime's packed kernel (int8 arithmetic on activations): "
                "the smaller weights pay where Linear layers dominate"),
    "throughput-hint": (0.3, 1.0, "the throughput hint splits the cores into streams: per-request latency grows "
                        "even when total throughput rises"),
    "architecture-exact": (0.9, 1.2, "an exact rewrite of the model (folded BatchNorm, dropped identities, padded "
                           "channels): the same arithmetic, a few ops fewer"),
    "architecture-approximate": (0.9, 2.0, "fewer FLOPs in the factored or pruned layers: the gain follows their "
                                 "share of the time"),
    "architecture-fine-tuned": (0.9, 2.0, "fewer FLOPs in the factored or pruned layers (their weights then "
                                "fine-tuned): the gain follows their share of the time"),
    "architecture-redesign": (0.8, 5.0, "a different architecture: the gain follows the FLOPs and layout it removes"),
    "tensorrt": (1.2, 4.0, "TensorRT fuses layers and picks kernels for this GPU"),
}



# The CPU flags as people name the instructions (the kernel's flag names are snake_case identifiers).
FEATURE_NAMES = {"avx512_vnni": "AVX-512 VNNI", "avx_vnni": "AVX-VNNI", "amx_int8": "AMX INT8",
                 "asimddp": "Arm dot product", "i8mm": "Arm i8mm", "avx512_bf16": "AVX-512 BF16",
                 "amx_bf16": "AMX BF16", "avx512_fp16": "AVX-512 FP16", "amx_fp16": "AMX FP16",
                 "asimdhp": "Arm fp16 arithmetic"}


def _cpu_has(hw: "HardwareProfile", feature: str) -> bool:
    has = getattr(getattr(hw, "cpu", None), "has", None)
    return bool(has(feature)) if callable(has) else False


def _features(hw: "HardwareProfile", names: Iterable[str]) -> list[str]:
    """The instructions among `names` this CPU has, by their common names."""
    return [FEATURE_NAMES.get(n, n) for n in names if _cpu_has(hw, n)]


def grouped_conv_share(baseline: Mapping[str, Any]) -> float | None:
    """The share of profiled layer time spent in depthwise or grouped convolutions (None unprofiled).

    A conv is grouped when its weights per output channel are fewer than its input channels: a dense
    conv holds in_channels x kernel area weights per output channel.
    """
    layers = [row for row in as_list(dig(baseline, "layers")) if isinstance(row, Mapping)]
    timed = [(row, number(row.get("time_ms"))) for row in layers]
    total = sum(t for _, t in timed if t)
    if not total:
        return None
    grouped = 0.0
    for row, t in timed:
        if not t or "Conv" not in str(row.get("type", "")):
            continue
        shapes = as_list(row.get("input_shapes"))
        out = as_list(row.get("output_shape"))
        params = number(row.get("params"))
        if not shapes or not isinstance(shapes[0], list) or len(shapes[0]) < 2 or len(out) < 2 or not params:
            continue
        cin, cout = number(shapes[0][1]), number(out[1])
        if cin and cout and params / cout < cin:
            grouped += t
    return grouped / total


def has_attention(baseline: Mapping[str, Any]) -> bool:
    """Whether the model looks like a transformer: a sequence axis in its inputs, or attention layers."""
    for tensor in as_list(dig(baseline, "inputs")):
        if isinstance(tensor, Mapping) and "sequence" in as_list(tensor.get("axes")):
            return True
    return any("Attention" in str(row.get("type", "")) for row in as_list(dig(baseline, "layers"))
               if isinstance(row, Mapping))


PRECISION_FAMILIES = ("int8", "bf16", "fp16", "ternary")
"""Precisions that are a prediction family of their own, whatever runtime computes them."""


def precision_family(precision: str) -> str:
    """The family a precision alone decides ('int8', 'bf16', 'fp16', 'ternary'), else 'runtime'."""
    precision = str(precision).lower()
    return precision if precision in PRECISION_FAMILIES else "runtime"


def baseline_efficiency(baseline: Mapping[str, Any]) -> float | None:
    """The share of the measured fp32 peak the baseline reached (FLOPs per call over its p50); None unknown."""
    flops = number(dig(baseline, "flops_per_sample"))
    p50 = number(dig(baseline, "latency_ms", "p50_ms"))
    peak = number(dig(baseline, "ceilings", "peak_flops", "fp32"))
    if not flops or not p50 or not peak:
        return None
    shape = as_list(dig(baseline, "input_shape"))
    batch = number(shape[0]) if shape else None
    return flops * (batch or 1) / (p50 / 1e3) / peak


def runtime_gain(baseline: Mapping[str, Any]) -> Prediction | None:
    """What replacing a torch eager baseline with a fusing runtime should give, before any precision change.

    The caller decides that the candidate fuses the graph and the baseline does not (a baseline on
    ONNX Runtime has already fused it). None where no fp32 peak was measured to judge the baseline
    against. The band's top is how far the baseline sits below the measured fp32 peak: a model that
    reaches 12% of it in PyTorch (small ops, per-op dispatch) has up to 8x to gain from fusion.
    """
    efficiency = baseline_efficiency(baseline)
    if efficiency is None:
        return None  # without measured ceilings the family's own band stands alone
    high = min(20.0, max(2.0, FUSED_EFFICIENCY / max(efficiency, 1e-6)))
    low = 1.0 if efficiency < LOW_EFFICIENCY else 0.8
    return Prediction(low, round(high, 1), f"PyTorch eager reaches {units.pct(min(efficiency, 1.0))} of the "
                      "measured fp32 peak here; a fusing runtime recovers up to the peak")


RULE_OF_THUMB = "rule of thumb from the CPU's ISA flags, no {precision} GEMM measured here"
"""How a band from the ISA flags alone is labelled: no measured figure backs it."""

CONVERSION_SHARE = 0.6
"""The low end of a measured-ratio band, as a share of the ratio: converting inputs and outputs around each
low-precision layer, and the layers that stay in fp32, take part of what the GEMM gains (or add to what it loses)."""

GEMM_SHARE = {"compute": 0.75, "other": 0.5}
"""The share of a model's time assumed to follow the GEMM ratio when that ratio is below 1, by bottleneck: the
rest (element-wise ops, memory traffic) is assumed not to slow down, which sets the top of the band."""

SLOWER_TOP = 0.95
"""A precision that measured slower than fp32 is never predicted to break even: the top of its band."""


def measured_ratio(baseline: Mapping[str, Any], precision: str) -> tuple[float, float, float] | None:
    """(peak over fp32's peak, the precision's peak, fp32's peak) from the run's measured CPU ceilings.

    None where the ceilings lack either figure, or are another device's (a GPU's ratio says nothing
    about the CPU's kernels).
    """
    ceilings = dig(baseline, "ceilings")
    if not isinstance(ceilings, Mapping) or str(ceilings.get("device") or "cpu") != "cpu":
        return None
    peak = number(dig(ceilings, "peak_flops", precision))
    fp32 = number(dig(ceilings, "peak_flops", "fp32"))
    if not peak or not fp32 or peak <= 0 or fp32 <= 0:
        return None
    return peak / fp32, peak, fp32


def _measured_band(precision: str, measured: tuple[float, float, float], bound: str | None,
                   rule_high: float) -> Prediction:
    """The band a measured GEMM ratio gives.

    Below 1: from every layer slowing by the ratio (less the conversions) up to only the GEMM share
    of the time doing so, never reaching 1. At or above 1: up to the ratio for a compute-bound
    model; for one bound elsewhere, up to the family's own rule of thumb at most (the faster
    arithmetic helps less).
    """
    ratio, peak, fp32 = measured
    if ratio < 1.0:
        share = GEMM_SHARE["compute" if bound == "compute" else "other"]
        top = min(SLOWER_TOP, 1.0 - (1.0 - ratio) * share)
        return Prediction(round(ratio * CONVERSION_SHARE, 2), round(top, 2),
                          f"{slower_note(precision, peak, 'fp32', fp32)}; the band follows that measured ratio "
                          f"({units.speedup(ratio)}), softened for the time not spent in GEMMs", family=precision)
    figures = (f"{precision} GEMM measured {units.flop_rate(peak)}, {units.speedup(ratio)} fp32's "
               f"{units.flop_rate(fp32)}")
    if bound == "compute":
        return Prediction(round(max(0.8, ratio * CONVERSION_SHARE), 2), round(ratio, 2),
                          f"{figures}, and the model is compute-bound: its gain follows that measured ratio, less "
                          "the conversions around each layer", family=precision)
    return Prediction(0.8, round(max(1.0, min(ratio, rule_high)), 2),
                      f"{figures}, but the model is {bound or 'not clearly'}-bound: the faster arithmetic helps less",
                      family=precision)


def _compose(runtime: Prediction | None, own: Prediction) -> Prediction:
    """A precision change on a fusing runtime: the runtime's band times the precision's own."""
    if runtime is None or runtime.low is None or runtime.high is None or own.low is None or own.high is None:
        return own
    return Prediction(round(runtime.low * own.low, 2), round(runtime.high * own.high, 1),
                      f"{own.basis}; on top of the runtime switch: {runtime.basis}", family=own.family)


def band(kind: str, hw: "HardwareProfile", baseline: Mapping[str, Any], *, gpu: bool = False,
         fuses_graph: bool = False, baseline_fuses: bool = False) -> Prediction:
    """The predicted speedup band over the baseline for a candidate of family `kind`, and the reason.

    `gpu`: the candidate runs on a GPU. `fuses_graph`: its runtime fuses the graph and replaces
    PyTorch's per-op dispatch; `baseline_fuses`: the baseline's runtime already did (an ONNX
    model's baseline on ONNX Runtime), so no runtime gain is expected from the switch.
    """
    runtime = runtime_gain(baseline) if fuses_graph and not baseline_fuses else None
    own = _predict(kind, hw, baseline, gpu=gpu, baseline_fuses=baseline_fuses)
    if kind == "runtime" and runtime is not None:
        return Prediction(runtime.low, runtime.high, runtime.basis, family=kind)
    return _compose(runtime, own)


def _predict(kind: str, hw: "HardwareProfile", baseline: Mapping[str, Any], *, gpu: bool,
             baseline_fuses: bool) -> Prediction:
    """The family's own band, as if the runtime stayed the baseline's."""
    bound = bottleneck(baseline)
    if kind == "int8" and not gpu:
        return _int8(hw, baseline, bound)
    if kind == "int8-dynamic":
        return Prediction(0.3, 1.2, "dynamic INT8 quantizes activations on every call: the overhead often "
                          "outweighs the integer maths on CPU", family=kind)
    if kind == "bf16" and not gpu:
        return _bf16(hw, baseline, bound)
    if kind == "fp16" and gpu:
        return Prediction(1.3, 3.0, "fp16 on tensor cores roughly halves memory traffic and doubles peak maths",
                          family=kind)
    if kind == "fp16":
        native = _features(hw, FP16_FEATURES)
        return (Prediction(0.8, 1.8, f"native fp16 ({', '.join(native)})", family=kind) if native
                else Prediction(0.2, 1.0, "no native fp16 arithmetic on this CPU: converted to fp32 per op",
                                family=kind))
    if kind in _FIXED_BANDS:
        low, high, basis = _FIXED_BANDS[kind]
        return Prediction(low, high, basis, family=kind)
    if kind == "compile":
        if bound == "overhead":
            return Prediction(1.0, 2.0, "torch.compile fuses ops, and the model is overhead-bound", family=kind)
        return Prediction(0.9, 1.4, "torch.compile fuses elementwise ops; the big kernels stay the same",
                          family=kind)
    if kind == "cuda-graphs":
        return (Prediction(1.2, 3.0, "the model is overhead-bound: replaying one graph removes launch costs",
                           family=kind) if bound == "overhead"
                else Prediction(0.95, 1.2, "launch overhead is a small part of this model's time", family=kind))
    if baseline_fuses:
        return Prediction(0.8, 1.6, "another fp32 runtime or setting against a baseline that already fuses the graph",
                          family=kind)
    if bound == "overhead":
        return Prediction(1.0, 3.0, "an fp32 runtime with graph fusion, and the model is overhead-bound (framework "
                          "time dominates)", family=kind)
    return Prediction(0.8, 2.0, "an fp32 runtime or thread setting: fusion and better kernels, the same arithmetic",
                      family=kind)


def _bf16(hw: "HardwareProfile", baseline: Mapping[str, Any], bound: str | None) -> Prediction:
    """bf16 on the CPU: the measured bf16/fp32 ratio where the run has it, else the rule of thumb from the flags."""
    measured = measured_ratio(baseline, "bf16")
    if measured is not None:
        return _measured_band("bf16", measured, bound, rule_high=1.6)
    label = RULE_OF_THUMB.format(precision="bf16")
    native = _features(hw, BF16_FEATURES)
    if not native:
        return Prediction(0.3, 1.0, f"no native bf16 on this CPU: bf16 is emulated, slower than fp32 ({label})",
                          family="bf16")
    if bound == "compute":
        return Prediction(1.3, 2.5, f"native bf16 ({', '.join(native)}) and the model is compute-bound ({label})",
                          family="bf16")
    return Prediction(0.8, 1.6, f"native bf16 ({', '.join(native)}), but the model is {bound or 'not'}-bound: "
                      f"halving the arithmetic helps less ({label})", family="bf16")


def _int8(hw: "HardwareProfile", baseline: Mapping[str, Any], bound: str | None) -> Prediction:
    """Static INT8 on the CPU: a measured int8 GEMM slower than fp32 decides first; then what the model is made of
    (depthwise convs, attention); then the measured int8/fp32 ratio, else the rule of thumb from the flags."""
    measured = measured_ratio(baseline, "int8")
    if measured is not None and measured[0] < 1.0:
        return _measured_band("int8", measured, bound, rule_high=3.0)
    dot = _features(hw, INT8_DOT_FEATURES)
    if not dot and measured is None:
        return Prediction(0.5, 1.1, "no INT8 dot-product instructions (VNNI, AMX, dotprod/i8mm) on this CPU: "
                          "INT8 sums through 16-bit intermediates and rarely beats fp32 "
                          f"({RULE_OF_THUMB.format(precision='int8')})", family="int8")
    grouped = grouped_conv_share(baseline)
    if grouped is not None and grouped > GROUPED_SHARE_HIGH:
        return Prediction(0.5, 1.2, f"{units.pct(grouped)} of layer time is in depthwise/grouped convs, which "
                          "have too little arithmetic for INT8 to pay", family="int8")
    if has_attention(baseline):
        return Prediction(0.6, 1.5, "an attention model: softmax, layer norms and the attention matmuls stay in "
                          "float, so only the linear layers speed up", family="int8")
    if measured is not None:
        return _measured_band("int8", measured, bound, rule_high=3.0)
    label = RULE_OF_THUMB.format(precision="int8")
    if bound == "compute":
        return Prediction(1.5, 4.0, f"{', '.join(dot)} on this CPU and the model is compute-bound ({label})",
                          family="int8")
    return Prediction(1.1, 3.0, f"{', '.join(dot)} on this CPU; the model is {bound or 'not clearly'}-bound, so "
                      f"less of the time is integer-friendly arithmetic ({label})", family="int8")
