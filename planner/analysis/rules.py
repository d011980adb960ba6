"""The architecture lint rules: each reads module attributes and the recorded dataflow, never names."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from torch import nn

from planner import units
from planner.analysis.findings import Finding, Severity, at_most, grade
from planner.analysis.graph import Dataflow, Node
from planner.analysis.layers import FunctionalOp, LayerReport, LayerStats
from planner.results.analysis import VerdictRecord

CONV_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
BATCHNORM_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)
POOL_TYPES = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
UPSAMPLE_TYPES = (nn.Upsample,)  # UpsamplingNearest2d/UpsamplingBilinear2d subclass it
EXPENSIVE_ACTIVATION_TYPES = (nn.GELU, nn.SiLU, nn.Mish, nn.Hardswish, nn.ELU, nn.SELU, nn.CELU,
                              nn.Softplus, nn.Sigmoid, nn.Tanh, nn.LogSigmoid)
ACTIVATION_TYPES = EXPENSIVE_ACTIVATION_TYPES + (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU,
                                                 nn.Hardtanh, nn.Hardsigmoid)
EXPENSIVE_ACTIVATION_OPS = frozenset({"gelu", "silu", "mish", "hardswish", "elu", "selu", "celu",
                                      "softplus", "sigmoid", "tanh", "log_sigmoid_forward"})
ACTIVATION_OPS = EXPENSIVE_ACTIVATION_OPS | {"relu", "hardtanh", "leaky_relu", "prelu",
                                             "_prelu_kernel", "hardsigmoid", "clamp", "clamp_min"}

LARGE_MAP_PIXELS = 28 * 28
"""A map at least 28x28 is "large": from there on an activation pass costs real bandwidth."""

LARGE_MAP_ELEMENTS = 28 * 28 * 64
"""The same threshold for non-image (N, L, D) outputs, in elements per sample."""

DOWNSAMPLE_MIN_INPUT_SIDE = 64
"""Below a 64-pixel input (CIFAR-sized) a last map at 1/4 of the side is normal, not late."""


@dataclass(frozen=True)
class LintContext:
    """What every rule reads: the module (for attributes), the inputs, the report and its dataflow."""

    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    report: LayerReport
    # Layers rebuilt by path where the module object is gone (a torch.export graph's convs, ...).
    stand_ins: Mapping[str, nn.Module] = field(default_factory=dict)
    target: str | None = None  # "cpu", "nvidia" or "edge": the hardware the advice is for (None: not known)

    @property
    def example_input(self) -> torch.Tensor:
        """The first input (the image, for a vision model)."""
        return self.example_inputs[0]

    @property
    def reads_tokens(self) -> bool:
        """Whether every input is integer (token ids, masks): rules about images and feature maps do not apply."""
        return not any(x.is_floating_point() or x.is_complex() for x in self.example_inputs)

    @cached_property
    def flow(self) -> Dataflow:
        """The report's dataflow graph."""
        return Dataflow(self.report)

    def mod(self, layer: LayerStats | str) -> Any:
        """The module object that ran this layer call (or has this qualified name), or None.

        A stand-in where one was rebuilt; None when the module has no such submodule (a torch.export
        graph keeps only empty holders of the weights, a TorchScript report's rows are ops). Rules
        filter by module type first, so such layers simply match no rule. Typed Any: rules read
        attributes of the module types they filtered for (in_channels, kernel_size, ...), which
        nn.Module's typing calls `Tensor | Module`.
        """
        name = layer if isinstance(layer, str) else layer.name
        if name in self.stand_ins:
            return self.stand_ins[name]
        try:
            return self.module.get_submodule(name)
        except (AttributeError, RuntimeError):  # a ScriptModule raises RuntimeError: get_submodule unsupported
            return None

    def calls(self, types: tuple[type, ...]) -> list[LayerStats]:
        """The layer calls whose module is an instance of one of `types`, in execution order."""
        return [n for n in self.report.layers if isinstance(self.mod(n), types)]

    def flop_share(self, flops: float) -> float:
        """These FLOPs as a share of the model's total."""
        return flops / self.report.total_flops if self.report.total_flops else 0.0

    def time_share(self, calls: Iterable[LayerStats]) -> float | None:
        """These layer calls' measured time as a share of the forward pass; None when nothing was timed."""
        if not (self.report.has_time and self.report.forward_time_ms):
            return None
        return min(1.0, sum(n.time_ms or 0.0 for n in calls) / self.report.forward_time_ms)

    def is_activation(self, node: Node) -> bool:
        """Whether this node is an activation function (module or functional)."""
        if isinstance(node, FunctionalOp):
            return node.kind in ACTIVATION_OPS
        return isinstance(self.mod(node), ACTIVATION_TYPES)

    def is_conv(self, node: Node) -> bool:
        """Whether this node is a (non-transposed) convolution module call."""
        return isinstance(node, LayerStats) and isinstance(self.mod(node), CONV_TYPES)


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _spatial(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[2:]) if len(shape) >= 3 else ()


def _pixels(shape: tuple[int, ...]) -> int:
    return math.prod(_spatial(shape)) if _spatial(shape) else 0


def _hw(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in _spatial(shape))


def _kernel(conv: nn.Conv1d | nn.Conv2d | nn.Conv3d) -> tuple[int, ...]:
    return tuple(conv.kernel_size)


def _next8(c: int) -> int:
    return -(-c // 8) * 8


def large_kernels(ctx: LintContext) -> Finding | None:
    """Conv kernels of 5x5 or more (depthwise ones and patch embeddings excepted): slow, bandwidth-hungry.

    A conv whose stride equals its kernel (a ViT's 16x16 stride-16 patch embedding) reads each
    input pixel once: it is a reshape and a matrix multiply, with none of the overlapping windows
    that make large kernels costly, and 3x3 stacks could not replace it.
    """
    # 1-D convs are left out: long 1-D kernels are the norm in audio front ends.
    hits = [n for n in ctx.calls((nn.Conv2d, nn.Conv3d))
            if min(_kernel(ctx.mod(n))) >= 5 and ctx.mod(n).groups < ctx.mod(n).in_channels
            and not _is_patch_embedding(ctx.mod(n))]
    if not hits:
        return None
    kernels, flops, ratios = [], [], []
    for name in _unique(n.name for n in hits):
        conv = ctx.mod(next(n for n in hits if n.name == name))
        k = _kernel(conv)
        kernels.append("x".join(map(str, k)))
        flops.append(sum(n.flops for n in hits if n.name == name))
        # Same receptive field from n stacked 3x3 convs: the first Cin->Cout, the rest Cout->Cout.
        n3 = math.ceil((max(k) - 1) / 2)
        cin, cout, kk = conv.in_channels // conv.groups, conv.out_channels, math.prod(k)
        stack = 3 ** len(k) * (cin * cout + (n3 - 1) * cout * cout)
        ratios.append(round(stack / (kk * cin * cout), 3))
    share = ctx.flop_share(sum(flops))
    evidence: dict = {"kernel_sizes": kernels, "flops": flops,
                      "flop_shares": [round(ctx.flop_share(f), 4) for f in flops],
                      "flop_share": round(share, 4),
                      "est_3x3_stack_flop_ratio": ratios,
                      "est_note": "estimate: FLOPs of a 3x3 stack with the same receptive field "
                                  "relative to the large kernel (< 1 saves)"}
    impact, basis = share, "share of FLOPs in large-kernel convs"
    time_share = ctx.time_share(hits)
    if time_share is not None:
        # What this hardware spent on them decides how much they matter, not their FLOPs alone.
        evidence["time_share"] = round(time_share, 4)
        impact, basis = time_share, "share of measured time in large-kernel convs"
    title = (f"{len(kernels)} conv layer{'s' if len(kernels) != 1 else ''} with large kernels "
             f"({', '.join(kernels)}) do {share:.0%} of the FLOPs")
    if time_share is not None:
        title += f" and take {units.pct(time_share)} of the measured time"
    return Finding(
        id="large-kernels",
        title=title,
        severity=grade(impact, high=0.3, medium=0.1),
        layers=_unique(n.name for n in hits),
        evidence=evidence,
        impact=impact, impact_basis=basis,
        advice="Replace each large kernel with a stack of 3x3 convs (two for 5x5, three for 7x7) "
               "where the estimated ratio is below 1; for a stem (few input channels) use a "
               "stride-2 3x3 stem instead. 3x3 kernels hit the fastest Winograd/implicit-GEMM "
               "paths in cuDNN, oneDNN and TensorRT and move fewer bytes per output.",
    )


def _is_patch_embedding(conv: Any) -> bool:
    """Whether a conv cuts its input into non-overlapping patches: stride equal to kernel, no padding."""
    stride = _as_tuple(conv.stride)
    stride = stride * len(_kernel(conv)) if len(stride) == 1 else stride
    padding = conv.padding if isinstance(conv.padding, str) else _as_tuple(conv.padding)
    return tuple(stride) == _kernel(conv) and padding in ("valid", (0,) * len(padding))


def _idle_lane_share(cin: int, cout: int, in_fixed: bool, out_fixed: bool) -> float:
    """The share of a layer's padded work that aligning its changeable sides would put to use.

    A side fed by the image or producing the model's output cannot change: its padding stays.
    """
    cin = _next8(cin) if in_fixed else cin
    cout = _next8(cout) if out_fixed else cout
    return 1.0 - (cin * cout) / (_next8(cin) * _next8(cout))


def channel_alignment(ctx: LintContext) -> Finding | None:
    """Conv/linear channels not divisible by 8 keep tensor cores and SIMD tiles from running full."""
    convs2d = ctx.calls((nn.Conv2d,))
    conv_modules = _unique(n.name for n in convs2d)
    ready = sum(1 for name in conv_modules
                if ctx.mod(name).in_channels % 8 == 0 and ctx.mod(name).out_channels % 8 == 0)
    candidates = ctx.calls(CONV_TYPES + (nn.Linear,))
    if not candidates:
        return None
    misaligned, shapes, suggested, forced, flops, idle_shares = [], [], [], [], [], []
    for name in _unique(n.name for n in candidates):
        calls = [n for n in candidates if n.name == name]
        m = ctx.mod(name)
        cin, cout = (m.in_features, m.out_features) if isinstance(m, nn.Linear) else \
            (m.in_channels, m.out_channels)
        if cin % 8 == 0 and cout % 8 == 0:
            continue
        # An input side fed by the image or an output side that is the model's output can't change.
        in_fixed = cin % 8 == 0 or all(ctx.flow.fed_by_input(n.key) for n in calls)
        out_fixed = cout % 8 == 0 or all(ctx.flow.feeds_output(n.key) for n in calls)
        misaligned.append(name)
        shapes.append(f"{cin}->{cout}")
        suggested.append(f"{cin if in_fixed else _next8(cin)}->{cout if out_fixed else _next8(cout)}")
        forced.append(in_fixed and out_fixed)
        flops.append(sum(n.flops for n in calls))
        idle_shares.append(_idle_lane_share(cin, cout, in_fixed, out_fixed))
    if not misaligned:
        return None
    fixable = sum(f for f, fixed in zip(flops, forced) if not fixed)
    # Impact is what alignment would recover, not the FLOPs it touches: a 47-channel conv runs
    # in 48-wide vectors/tiles, so about 1 - (47*83)/(48*88) of its lanes idle. (On GPUs fp16
    # kernels may skip tensor cores entirely when misaligned; that larger loss is not estimated.)
    idle = sum(f * share for f, share in zip(flops, idle_shares))
    impact = ctx.flop_share(idle)
    total = len(conv_modules)
    gpu = ctx.target == "nvidia"
    # At least medium whenever a conv could be aligned: the idle-lane estimate is the CPU/SIMD
    # view; on GPUs a misaligned fp16 conv may miss tensor cores altogether (not estimated here).
    severity = Severity.INFO if all(forced) else grade(impact, high=0.3, medium=0.0)
    return Finding(
        id="channel-alignment",
        # Tensor cores are NVIDIA hardware: their readiness is news only where the advice is for such a GPU.
        title=(f"Tensor-core readiness {ready}/{total} conv layers; " if total and gpu else "")
        + f"{len(misaligned)} layer{'s' if len(misaligned) != 1 else ''} with channels not divisible by 8",
        severity=severity, layers=tuple(misaligned),
        # Tensor-core readiness is evidence only for an NVIDIA target; elsewhere it names hardware that is not there.
        evidence={**({"tensor_core_ready": f"{ready}/{total}", "ready": ready, "total": total,
                      "ready_rule": "Conv2d with in and out channels divisible by 8 (tensor cores need no padding)"}
                     if gpu else {}),
                  "channels": shapes, "suggested_channels": suggested,
                  "fixed_by_model_io": forced,
                  "misaligned_flop_share": round(ctx.flop_share(sum(flops)), 4),
                  "fixable_flop_share": round(ctx.flop_share(fixable), 4),
                  "idle_lane_share": round(impact, 4)},
        impact=impact,
        impact_basis="estimated share of FLOP-weighted vector lanes idle from channel counts "
                     "not divisible by 8",
        advice=f"Round channel counts up to a multiple of 8 ({channel_suggestions(misaligned, shapes, suggested)}; "
               f"16 helps int8{', 64 helps some GPUs further' if gpu else ''}). Only the image-facing input "
               "side and the class count cannot change; padding costs a few percent FLOPs but lets fp16/int8 "
               f"kernels use {'tensor cores and full vector widths' if gpu else 'the full width of the vector units'}.",
        exact=True,  # zero-weight channels compute the same function
    )


def channel_suggestions(layers: list[str], shapes: list[str], suggested: list[str], *, shown: int = 3) -> str:
    """The first few misaligned layers with their channels now and rounded up, in words ('conv1 3->47 to 3->48').

    A layer whose channels are the model's input or its classes keeps them, so it is not listed.
    """
    pairs = [f"{layer} {now} to {want}" for layer, now, want in zip(layers, shapes, suggested) if now != want]
    if not pairs:
        return "here none can change: they are the model's input channels or its class count"
    more = len(pairs) - shown
    return ", ".join(pairs[:shown]) + (f" and {more} more" if more > 0 else "")


def expensive_activations(ctx: LintContext) -> Finding | None:
    """Transcendental activations on large maps: extra passes that don't fuse as cheaply as ReLU."""
    if ctx.reads_tokens:
        return None
    def large(shape: tuple[int, ...]) -> bool:
        if len(shape) >= 4:
            return _pixels(shape) >= LARGE_MAP_PIXELS
        return len(shape) >= 2 and math.prod(shape[1:]) >= LARGE_MAP_ELEMENTS

    layers = [n for n in ctx.calls(EXPENSIVE_ACTIVATION_TYPES) if large(n.output_shape)]
    ops = [op for op in ctx.report.functional_ops
           if op.kind in EXPENSIVE_ACTIVATION_OPS and large(op.output_shape)]
    if not layers and not ops:
        return None
    kinds = sorted({n.type for n in layers} | {f"F.{op.kind}" for op in ops})
    act_bytes = sum(n.activation_bytes for n in layers) + sum(op.activation_bytes for op in ops)
    all_act_bytes = sum(n.activation_bytes for n in ctx.report.nodes)
    biggest = max((*(n.output_shape for n in layers), *(op.output_shape for op in ops)),
                  key=lambda s: math.prod(s))
    act_share = round(act_bytes / all_act_bytes, 4) if all_act_bytes else 0.0
    evidence = {"calls": len(layers) + len(ops), "types": kinds, "largest_map": list(biggest),
                "activation_bytes": act_bytes, "activation_share": act_share}
    if ctx.report.has_time and ctx.report.forward_time_ms:
        time_ms = sum(n.time_ms or 0.0 for n in layers)
        evidence["time_ms"] = round(time_ms, 4)
        evidence["time_share"] = round(time_ms / ctx.report.forward_time_ms, 4)
        impact, basis = time_ms / ctx.report.forward_time_ms, "share of measured time"
        severity = grade(impact, high=0.15, medium=0.03)
    else:
        impact = act_share
        basis = "share of activation memory"
        severity = grade(impact, high=0.5, medium=0.1)
    return Finding(
        id="expensive-activations",
        title=f"{'/'.join(kinds)} on maps up to {_hw(biggest) or 'x'.join(map(str, biggest[1:]))} "
              f"({evidence['calls']} calls)",
        severity=severity,
        layers=_unique([*(n.name for n in layers), *(op.name for op in ops)]),
        evidence=evidence, impact=impact, impact_basis=basis,
        advice="Use ReLU (or ReLU6/LeakyReLU) on the large early maps: it fuses into the conv "
               "epilogue in every inference runtime and costs one compare per element, where GELU/"
               "SiLU need erf/exp. Keep the costly activation only where accuracy needs it; "
               "swapping it needs fine-tuning.",
    )


def unfused_conv_bn(ctx: LintContext) -> Finding | None:
    """BatchNorm run as a separate pass after a conv (foldable), or after its activation (not)."""
    chains: list[str] = []
    involved: list[str] = []
    bn_calls: list[LayerStats] = []
    foldable = blocked = 0
    for bn in ctx.calls(BATCHNORM_TYPES):
        srcs = ctx.flow.producers(bn.key)
        if len(srcs) != 1 or srcs[0] not in ctx.flow.nodes:
            continue
        prev = ctx.flow.nodes[srcs[0]]
        if ctx.is_conv(prev):
            foldable += 1
            chain = [prev, bn]
        elif ctx.is_activation(prev):
            before = [ctx.flow.nodes[k] for k in ctx.flow.producers(prev.key) if k in ctx.flow.nodes]
            if len(before) != 1 or not ctx.is_conv(before[0]):
                continue
            blocked += 1
            chain = [before[0], prev, bn]
        else:
            continue
        bn_calls.append(bn)
        chains.append("->".join(n.type if isinstance(n, LayerStats) else f"F.{n.kind}"
                                for n in chain))
        involved.extend(n.name if isinstance(n, LayerStats) else n.key for n in chain)
    if not chains:
        return None
    bn_bytes = sum(n.bytes_moved for n in bn_calls)
    evidence = {"chains": chains, "foldable": foldable, "not_foldable": blocked,
                "batchnorm_bytes_moved": bn_bytes}
    if blocked:
        evidence["not_foldable_reason"] = (
            "BatchNorm applied after the activation cannot be folded into the conv's weights: "
            "the nonlinearity sits between them, so it stays a separate pass over the whole map")
    if ctx.report.has_time and ctx.report.forward_time_ms:
        time_ms = sum(n.time_ms or 0.0 for n in bn_calls)
        evidence["batchnorm_time_ms"] = round(time_ms, 4)
        impact, basis = time_ms / ctx.report.forward_time_ms, "share of measured time"
    else:
        total_bytes = ctx.report.total_bytes_moved
        impact, basis = (bn_bytes / total_bytes if total_bytes else 0.0), "share of bytes moved"
    return Finding(
        id="unfused-conv-bn",
        title=f"{len(chains)} conv/BatchNorm chain{'s' if len(chains) != 1 else ''} left unfused"
              + (f", {blocked} with BatchNorm after the activation (cannot fold)" if blocked else ""),
        severity=Severity.MEDIUM if blocked else Severity.LOW,
        layers=_unique(involved), evidence=evidence, impact=impact, impact_basis=basis,
        advice=("Reorder to conv -> BatchNorm -> activation (needs fine-tuning) so BatchNorm folds "
                "into the conv. " if blocked else "")
               + "Fold conv->BatchNorm before deployment (torch.ao.quantization.fuse_modules or an "
                 "fx pass for eager PyTorch; TensorRT, ONNX Runtime and OpenVINO fold it on export): "
                 "the BatchNorm pass and its memory traffic disappear at no accuracy cost.",
        exact=not blocked,  # folding is exact; moving a BatchNorm across its activation needs fine-tuning
    )


def late_downsampling(ctx: LintContext) -> Finding | None:
    """Feature maps kept at high resolution deep into the network, and stride-1 pooling."""
    if ctx.reads_tokens:
        return None
    convs = [n for n in ctx.calls(CONV_TYPES) if _spatial(n.output_shape)]
    pools = [n for n in ctx.calls(POOL_TYPES)
             if all(s == 1 for s in _as_tuple(ctx.mod(n).stride))
             and max(_as_tuple(ctx.mod(n).kernel_size)) > 1]
    late = False
    evidence: dict = {}
    high_res: list[LayerStats] = []
    if convs:
        input_px = _pixels(convs[0].input_shapes[0]) if convs[0].input_shapes else 0
        stem_px = _pixels(convs[0].output_shape)
        rest = convs[1:]
        at_stem = [n for n in rest if _pixels(n.output_shape) >= stem_px]
        side_ratio = math.sqrt(_pixels(convs[-1].output_shape) / input_px) if input_px else 0.0
        big_input = min(_spatial(convs[0].input_shapes[0]) or (0,)) >= DOWNSAMPLE_MIN_INPUT_SIDE
        late = (len(rest) >= 2 and len(at_stem) * 2 >= len(rest)) or (big_input and side_ratio >= 0.25)
        high_res = [n for n in rest if _pixels(n.output_shape) * 16 >= input_px]
        evidence = {"network_input": _hw(convs[0].input_shapes[0]),
                    "stem_output": _hw(convs[0].output_shape),
                    "convs_at_stem_resolution": f"{len(at_stem)}/{len(rest)}",
                    "last_conv_map": _hw(convs[-1].output_shape),
                    "last_conv_side_ratio": round(side_ratio, 4)}
    if not late and not pools:
        return None
    evidence["stride1_pools"] = len(pools)
    if late:
        impact = ctx.flop_share(sum(n.flops for n in high_res))
        evidence["high_res_flop_share"] = round(impact, 4)
        basis = "share of FLOPs at >= 1/4 of the input side after the stem"
        title = (f"Minimal downsampling: maps stay at {evidence['last_conv_map']} through the last "
                 f"conv ({evidence['last_conv_side_ratio']:.0%} of the {evidence['network_input']} "
                 "input side)")
        severity = grade(impact, high=0.5, medium=0.2)
    else:
        total_bytes = ctx.report.total_bytes_moved
        impact = sum(n.bytes_moved for n in pools) / total_bytes if total_bytes else 0.0
        basis = "share of bytes moved"
        title = f"{len(pools)} stride-1 pooling layer{'s' if len(pools) != 1 else ''} keep the resolution"
        severity = Severity.LOW
    if pools:
        title += f"; {len(pools)} stride-1 pooling layer{'s' if len(pools) != 1 else ''}"
    return Finding(
        id="late-downsampling", title=title, severity=severity,
        layers=_unique([*(n.name for n in high_res if late), *(n.name for n in pools)]),
        evidence=evidence, impact=impact, impact_basis=basis,
        advice="Downsample early and steadily: stride-2 convs or stride-2 pooling after the stem "
               "and every stage or two, ending near 1/32 of the input side (7x7 from 224). Each "
               "halving of the side cuts the downstream FLOPs and activation memory about 4x; "
               "give stride 2 to any stride-1 pooling that is meant to downsample.",
    )


def _as_tuple(value: int | tuple[int, ...]) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def input_upsampling(ctx: LintContext) -> Finding | None:
    """The input interpolated to a larger size inside forward: every later layer pays for the pixels."""
    if ctx.reads_tokens:
        return None
    nodes: list[Node] = [op for op in ctx.report.functional_ops if op.kind == "interpolate"]
    nodes += ctx.calls(UPSAMPLE_TYPES)
    best: Finding | None = None
    for node in nodes:
        shapes = node.input_shapes
        if not shapes or not ctx.flow.fed_by_input(node.key):
            continue
        before, after = _pixels(shapes[0]), _pixels(node.output_shape)
        if not before or after <= before:
            continue
        factor = after / before
        downstream = [ctx.flow.nodes[k] for k in ctx.flow.descendants(node.key)]
        down_share = ctx.flop_share(sum(n.flops for n in downstream))
        impact = down_share * (1.0 - 1.0 / factor)
        finding = Finding(
            id="input-upsampling",
            title=f"Input upsampled {_hw(shapes[0])} -> {_hw(node.output_shape)} inside forward "
                  f"({factor:.2f}x the pixels)",
            severity=grade(impact, high=0.3, medium=0.1),
            layers=(node.name if isinstance(node, LayerStats) else node.key,),
            evidence={"from": _hw(shapes[0]), "to": _hw(node.output_shape),
                      "pixel_factor": round(factor, 4),
                      "downstream_flop_share": round(down_share, 4),
                      "est_flops_at_input_resolution": round(
                          sum(n.flops for n in downstream) / factor),
                      "est_note": "estimate: downstream FLOPs scale with pixels"},
            impact=impact, impact_basis=f"share of FLOPs (downstream x (1 - 1/{factor:.2f}))",
            advice="Run the network at the data's native resolution (adapt the stem or pooling, "
                   "fine-tune) or upsample once offline; upsampling inside forward multiplies "
                   "every later layer's FLOPs and activation memory by the pixel factor without "
                   "adding information.",
        )
        if best is None or finding.impact > best.impact:
            best = finding
    return best


def dense_classifier(ctx: LintContext) -> Finding | None:
    """A Linear layer holding half the parameters or more: a low-rank or pruning candidate.

    Its severity follows its share of measured time where the layers were timed: a compact
    model's 512->1000 classifier can hold two thirds of the parameters yet take a few percent of
    the time, and then it matters for the model's size and memory, not its speed.
    """
    total = ctx.report.total_params
    if not total:
        return None
    best: Finding | None = None
    for name in _unique(n.name for n in ctx.calls((nn.Linear,))):
        lin = ctx.mod(name)
        params = sum(p.numel() for p in lin.parameters())
        weight_bytes = sum(p.numel() * p.element_size() for p in lin.parameters())
        share = params / total
        if share < 0.5:
            continue
        rank = max(1, min(lin.in_features, lin.out_features) // 4)
        bias = lin.out_features if lin.bias is not None else 0
        low_rank = rank * (lin.in_features + lin.out_features) + bias
        evidence = {"in_features": lin.in_features, "out_features": lin.out_features,
                    "params": params, "param_share": round(share, 4), "weight_bytes": weight_bytes,
                    "est_rank": rank, "est_low_rank_params": low_rank,
                    "est_note": "estimate: factorising into two Linears at rank min(in,out)/4"}
        title = f"Linear {lin.in_features}->{lin.out_features} holds {share:.0%} of the parameters"
        fix = ("factorise it into two thin Linears (SVD, rank ~ min(in,out)/4, then fine-tune), prune "
               "it, or pool the features harder before it")
        time_share = ctx.time_share(n for n in ctx.report.layers if n.name == name)
        if time_share is None:
            severity = Severity.HIGH if share >= 0.8 and params >= 1_000_000 else Severity.MEDIUM
            impact, basis = share, "share of parameters (layer time not measured)"
            advice = (f"{fix[0].upper()}{fix[1:]}; weight bytes, not FLOPs, set its cost at small batch.")
        else:
            evidence["time_share"] = round(time_share, 4)
            severity = grade(time_share, high=0.3, medium=0.1)
            impact, basis = time_share, "share of measured time"
            title += f" but takes {units.pct(time_share)} of the measured time"
            if severity == Severity.LOW:
                advice = (f"It matters for the model's size and memory ({units.size(weight_bytes)} of weights), "
                          f"not its speed: it takes {units.pct(time_share)} of the measured time here. Where "
                          f"size or memory is a constraint, {fix}.")
            else:
                advice = (f"{fix[0].upper()}{fix[1:]}; it takes {units.pct(time_share)} of the measured time, "
                          "and weight bytes, not FLOPs, set its cost at small batch.")
        finding = Finding(id="dense-classifier", title=title, severity=severity, layers=(name,),
                          evidence=evidence, impact=impact, impact_basis=basis, advice=advice)
        if best is None or finding.impact > best.impact:
            best = finding
    return best


_DEPTHWISE_FIX = ("Replace dense 3x3 convs with depthwise 3x3 + pointwise 1x1 (MobileNet style) where "
                  "accuracy allows, then fine-tune.")
DEPTHWISE_ADVICE = {
    "cpu": f"{_DEPTHWISE_FIX} On CPUs the FLOP cut turns into time: depthwise and pointwise convs run "
           "well in oneDNN, OpenVINO and ONNX Runtime.",
    "edge": f"{_DEPTHWISE_FIX} On edge CPUs and NPUs the FLOP cut turns into time and energy; it is the "
            "design of the mobile networks these boards are tuned for.",
    "nvidia": "Measure before retraining: on GPUs dense 3x3 convs often run faster than depthwise-"
              "separable ones despite the FLOPs, because depthwise convs are memory-bound and leave "
              "the tensor cores idle. Time one block both ways on this GPU (fp16, the batch you "
              f"serve); only if the depthwise version wins: {_DEPTHWISE_FIX[0].lower()}{_DEPTHWISE_FIX[1:]}",
}
"""The depthwise-separable advice for each target: CPUs and edge gain, GPUs often do not."""


def depthwise_candidates(ctx: LintContext) -> Finding | None:
    """Dense 3x3 convs with wide inputs dominating FLOPs: depthwise-separable would cut them.

    The advice depends on the target: CPUs and edge devices turn the FLOP cut into time; on GPUs
    dense 3x3 convs are often faster than depthwise ones, so there the finding is at most low and
    asks for a measurement first.
    """
    hits = [n for n in ctx.calls((nn.Conv2d,))
            if ctx.mod(n).groups == 1 and _kernel(ctx.mod(n)) == (3, 3)
            and ctx.mod(n).in_channels >= 32]
    share = ctx.flop_share(sum(n.flops for n in hits))
    if not hits or share < 0.5:
        return None
    factors, saved, saved_time = [], 0.0, 0.0
    for name in _unique(n.name for n in hits):
        conv = ctx.mod(name)
        k2, cout = 9, conv.out_channels
        factor = k2 * cout / (k2 + cout)
        factors.append(round(factor, 2))
        saved += sum(n.flops for n in hits if n.name == name) * (1.0 - 1.0 / factor)
        saved_time += sum(n.time_ms or 0.0 for n in hits if n.name == name) * (1.0 - 1.0 / factor)
    impact, basis = ctx.flop_share(saved), "share of FLOPs (estimated saving)"
    evidence = {"flop_share": round(share, 4), "est_flop_reduction": factors,
                "est_flop_share_saved": round(impact, 4),
                "est_note": "estimate: k^2*Cout/(k^2+Cout) per layer for depthwise 3x3 + pointwise 1x1"}
    time_share = ctx.time_share(hits)
    if time_share is not None:
        impact = min(1.0, saved_time / (ctx.report.forward_time_ms or 1.0))
        basis = "share of measured time (estimated saving, if time fell with the FLOPs)"
        evidence["time_share"] = round(time_share, 4)
    severity = Severity.MEDIUM if impact >= 0.3 else Severity.LOW
    target = ctx.target or "cpu"
    if target == "nvidia":
        severity = at_most(severity, Severity.LOW)
        evidence["target_note"] = "GPU: dense 3x3 convs often beat depthwise-separable ones; measure first"
    return Finding(
        id="depthwise-candidates",
        title=f"{len(factors)} dense 3x3 conv{'s' if len(factors) != 1 else ''} do {share:.0%} of the "
              "FLOPs (depthwise-separable candidates)",
        severity=severity,
        layers=_unique(n.name for n in hits),
        evidence=evidence, impact=impact, impact_basis=basis,
        advice=DEPTHWISE_ADVICE.get(target, DEPTHWISE_ADVICE["cpu"]),
        advice_by_target=dict(DEPTHWISE_ADVICE),
    )


OVERHEAD_ADVICE = {
    "nvidia": "Launch overhead, not the GPU's arithmetic, sets the time. Capture the forward pass in a "
              "CUDA graph (torch.compile with mode='reduce-overhead', or torch.cuda.graphs) so its many "
              "small kernels launch as one; or build a TensorRT engine, which fuses layers into fewer "
              "kernels; and serve larger batches, so each launch carries more samples.",
    "cpu": "Per-operator framework overhead, not the cores' arithmetic, sets the time. Run the model in "
           "ONNX Runtime or OpenVINO, whose graph optimisers fuse small operators (conv with its bias and "
           "activation, chains of elementwise ops) and dispatch without Python; try fewer threads, as "
           "small operators do not split well across cores and every extra thread adds synchronisation; "
           "and serve larger batches, so each operator call does more work.",
    "edge": "Per-operator overhead, not the board's arithmetic, sets the time. On a Jetson, build a "
            "TensorRT engine (fused layers, fewer kernel launches); on a CPU board, run ONNX Runtime or "
            "OpenVINO with graph optimisations, which fuse small operators; use fewer threads than cores, "
            "and batch requests where latency allows.",
}
"""What removes per-call overhead on each target."""


def overhead_bound(verdict: VerdictRecord, report: LayerReport, target: str | None) -> Finding | None:
    """A finding for a model whose whole-model verdict is overhead-bound: what removes overhead here.

    Its impact is the share of the measured time the roofline floor does not explain.
    """
    if verdict.bound != "overhead":
        return None
    measured = verdict.measured_time_s
    floor = max(verdict.compute_time_s or 0.0, verdict.memory_time_s or 0.0)
    if not measured:
        return None
    impact = max(0.0, min(1.0, 1.0 - floor / measured))
    calls = len(report.layers)
    evidence = {"measured_ms": round(measured * 1e3, 4), "roofline_floor_ms": round(floor * 1e3, 4),
                "layer_calls": calls, "overhead_evidence": verdict.overhead_evidence}
    if calls:
        evidence["ms_per_layer_call"] = round(measured * 1e3 / calls, 4)
    target = target or "cpu"
    why = verdict.overhead_evidence or f"{calls} layer calls"
    return Finding(
        id="overhead-bound",
        title=f"Overhead-bound: {units.ms(measured * 1e3)} measured where the hardware's limits allow "
              f"{units.ms(floor * 1e3)} ({why})",
        # An unstable measurement cannot carry a high-severity call (the verdict says why it is unstable).
        severity=grade(impact, high=0.5, medium=0.2) if verdict.stable
        else at_most(grade(impact, high=0.5, medium=0.2), Severity.MEDIUM),
        layers=(), evidence=evidence, impact=impact,
        impact_basis="share of measured time above the roofline floor (the least time the hardware's "
                     "peak FLOP/s and bandwidth allow)",
        advice=OVERHEAD_ADVICE.get(target, OVERHEAD_ADVICE["cpu"]),
        advice_by_target=dict(OVERHEAD_ADVICE), category="runtime",
    )


Rule = Callable[[LintContext], Finding | None]

RULES: tuple[Rule, ...] = (
    input_upsampling, large_kernels, channel_alignment, expensive_activations, unfused_conv_bn,
    late_downsampling, dense_classifier, depthwise_candidates,
)
"""Every lint rule, run in this order before ranking."""
