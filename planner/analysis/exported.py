"""Per-layer analysis of a torch.export module (a .pt2 file), rebuilt from its graph's module stacks.

`ExportedProgram.module()` is a flat fx graph of aten calls: the model's leaf modules are gone
(only empty holders of their weights remain), so forward hooks see no layer calls. Every node
still carries `nn_module_stack`, the chain of modules it was traced inside, with paths and class
names. Running the graph node by node (a torch.fx.Interpreter) with FlopCounterMode and a clock
around each node, and summing nodes into the innermost module of their stack, gives the same
per-layer rows as hooks give for the eager model: `layer1.0.conv1` of type `Conv2d`.
"""

from __future__ import annotations

import importlib
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import fx, nn
from torch.utils.flop_counter import FlopCounterMode

from planner.analysis.stats import (
    FORWARD_ERRORS,
    FORWARD_OWNER,
    GATHER_OPS,
    INPUT_NODE,
    FunctionalOp,
    LayerReport,
    LayerStats,
    footprint,
    forward_error,
    iter_tensors,
    median_run,
    nbytes,
    op_bytes,
    op_kind,
    packet_name,
    passes_through,
    runs_text,
    sync_for,
    where_run,
)

NodeSink = Callable[[fx.Node, list[tuple[fx.Node, Any]], Any, int, float], None]
"""Told of every call_function node: (node, its input nodes with their values, output, FLOPs, ms)."""


def is_exported_module(module: nn.Module) -> bool:
    """Whether this is a graph from torch.export: an fx GraphModule whose nodes record their module stack."""
    if not isinstance(module, fx.GraphModule):
        return False
    return any(n.meta.get("nn_module_stack") for n in module.graph.nodes if n.op == "call_function")


def _owner(node: fx.Node) -> tuple[str, str, str]:
    """The innermost module a node ran in: (the call's unique key, module path, class name)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", "", ""
    key, (path, cls) = list(stack.items())[-1]
    name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
    return str(key), str(path), name


def _leaf_paths(gm: fx.GraphModule) -> set[str]:
    """Module paths no other recorded module sits inside: the leaves, whose nodes make one layer call."""
    paths = {str(path) for n in gm.graph.nodes if n.op == "call_function"
             for path, _ in (n.meta.get("nn_module_stack") or {}).values()}
    if paths == {""}:
        return {""}  # a bare module (one Conv2d exported alone) is itself the only layer
    return {p for p in paths if p and not any(q.startswith(p + ".") for q in paths)}


def _torch_class(node: fx.Node) -> type | None:
    """The torch.nn class a node's innermost module was (None for the user's own classes)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    cls = list(stack.values())[-1][1]
    if isinstance(cls, type):
        return cls if cls.__module__.startswith("torch.nn.") else None
    module_name, _, name = str(cls).rpartition(".")
    if not module_name.startswith("torch.nn."):
        return None
    found = getattr(importlib.import_module(module_name), name, None)
    return found if isinstance(found, type) else None


def _shape(value: Any) -> tuple[int, ...] | None:
    val = value.meta.get("val") if isinstance(value, fx.Node) else None
    return tuple(int(s) for s in val.shape) if isinstance(val, torch.Tensor) else None


_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_POOLS = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def _rebuild(cls: type, kw: dict[str, Any]) -> nn.Module | None:
    """A stand-in of a torch.nn layer with the attributes its aten call shows (weights on the meta device)."""
    weight = _shape(kw.get("weight"))
    # Any: each branch calls the constructor of the class it matched, with that class's arguments.
    base: Any = next((b for b in (*_CONVS, nn.Linear, *_POOLS, *_NORMS) if issubclass(cls, b)), None)
    if base in _CONVS and weight and "stride" in kw:
        groups = int(kw.get("groups", 1))
        return base(weight[1] * groups, weight[0], weight[2:], stride=kw["stride"], padding=kw["padding"],
                    dilation=kw["dilation"], groups=groups, bias=kw.get("bias") is not None, device="meta")
    if base is nn.Linear and weight and len(weight) == 2:
        return nn.Linear(weight[1], weight[0], bias=kw.get("bias") is not None, device="meta")
    if base in _POOLS and "kernel_size" in kw:
        return base(kw["kernel_size"], stride=kw.get("stride") or None, padding=kw.get("padding", 0))
    if base in _NORMS:
        features = weight or _shape(kw.get("input"))
        return base(features[0] if weight else features[1], device="meta") if features else None
    if base is None and issubclass(cls, nn.Module):
        try:
            return cls()  # activations, nn.Upsample, ...: the rules read their type only
        except TypeError:
            return None
    return None


def stand_in_modules(gm: nn.Module) -> dict[str, nn.Module]:
    """torch.nn layers rebuilt from a torch.export graph, by module path, for the lint rules to read.

    The export keeps a conv's weight but not the Conv2d: its kernel, stride, padding and groups
    live on as the aten call's arguments. Only standard torch.nn classes are rebuilt; the user's
    own modules are left out (the lint reads them by type only when they are torch.nn's).
    """
    built: dict[str, nn.Module] = {}
    if not is_exported_module(gm) or not isinstance(gm, fx.GraphModule):
        return built
    leaves = _leaf_paths(gm)
    for n in gm.graph.nodes:
        _, path, _ = _owner(n) if n.op == "call_function" else ("", "", "")
        if path not in leaves or path in built:
            continue
        cls = _torch_class(n)
        if cls is None:
            continue
        try:
            pair = n.normalized_arguments(gm, normalize_to_only_use_kwargs=True)
        except (RuntimeError, TypeError, ValueError):
            pair = None
        module = _rebuild(cls, dict(pair.kwargs) if pair is not None else {})
        if module is not None:
            built[path] = module
    return built


class _Runner(fx.Interpreter):
    """Runs a graph node by node, timing each call_function node and reading FLOPs around it."""

    def __init__(self, gm: fx.GraphModule, on_node: NodeSink, *, sync: Callable[[], None],
                 counter: FlopCounterMode | None = None) -> None:
        super().__init__(gm, garbage_collect_values=True)
        self.on_node = on_node
        self.sync = sync
        self.counter = counter

    def run_node(self, n: fx.Node) -> Any:
        """Run one node; a call_function node is timed and reported."""
        if n.op != "call_function":
            return super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        ins = [(m, self.env[m]) for m in n.all_input_nodes if m in self.env]
        before = self.counter.get_total_flops() if self.counter is not None else 0
        self.sync()
        t0 = time.perf_counter()
        out = self.call_function(n.target, args, kwargs)
        self.sync()
        elapsed = (time.perf_counter() - t0) * 1e3
        flops = self.counter.get_total_flops() - before if self.counter is not None else 0
        self.on_node(n, ins, out, flops, elapsed)
        return out


@dataclass
class _Call:
    """Mutable scratch for one module call being rebuilt from consecutive nodes."""

    key: str
    name: str
    type: str
    call: int
    index: int
    nodes: set[fx.Node] = field(default_factory=set)
    order: list[fx.Node] = field(default_factory=list)
    flops: int = 0
    inputs: dict[fx.Node, list[torch.Tensor]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    weights: dict[str, tuple[int, int]] = field(default_factory=dict)  # target: (bytes charged, params)
    values: dict[fx.Node, list[torch.Tensor]] = field(default_factory=dict)


@dataclass
class _Builder:
    """Groups the graph's nodes into module calls and functional ops, as hooks would have seen them."""

    leaves: set[str]
    param_names: set[str]
    producers: dict[fx.Node, str] = field(default_factory=dict)
    calls: list[LayerStats] = field(default_factory=list)
    footprints: list[int] = field(default_factory=list)
    ops: list[FunctionalOp] = field(default_factory=list)
    call_of: dict[fx.Node, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    op_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    current: _Call | None = None

    def source(self, node: fx.Node) -> str | None:
        """Who produced a node's value: a layer call or op key, the input, or None for weights."""
        if node.op == "placeholder":
            return INPUT_NODE
        return self.producers.get(node)

    def on_node(self, n: fx.Node, ins: list[tuple[fx.Node, Any]], out: Any, flops: int, _ms: float) -> None:
        """Charge a node to the module call it belongs to, or record it as a functional op."""
        key, path, cls = _owner(n)
        if path in self.leaves and cls:
            if self.current is None or self.current.key != key:
                self.close()
                self.counts[path] += 1
                self.current = _Call(key=key, name=path, type=cls, call=self.counts[path], index=len(self.calls))
            self._charge(self.current, n, ins, out, flops)
            return
        self.close()
        self._functional(n, path, ins, out, flops)

    def _charge(self, call: _Call, n: fx.Node, ins: list[tuple[fx.Node, Any]], out: Any, flops: int) -> None:
        call.nodes.add(n)
        call.order.append(n)
        call.flops += flops
        outputs = list(iter_tensors(out))
        call.values[n] = outputs
        gathers = packet_name(n.target) in GATHER_OPS
        for pos, (m, value) in enumerate(ins):
            tensors = list(iter_tensors(value))
            if m.op == "get_attr":
                size = sum(nbytes(t) for t in tensors)
                if gathers and pos == 0 and outputs:
                    size = min(size, nbytes(outputs[0]))
                params = sum(t.numel() for t in tensors) if str(m.target) in self.param_names else 0
                old = call.weights.get(str(m.target), (0, params))
                call.weights[str(m.target)] = (max(old[0], size), params)
            elif m not in call.nodes and m not in call.inputs and tensors:
                call.inputs[m] = tensors
                src = self.source(m)
                if src is not None and src not in call.sources:
                    call.sources.append(src)
        self.producers[n] = call.name if call.call == 1 else f"{call.name}#{call.call}"
        self.call_of[n] = self.producers[n]

    def close(self) -> None:
        """Finish the call being built: its outputs are the values used outside it."""
        call, self.current = self.current, None
        if call is None:
            return
        outs = [t for m in call.order if any(u not in call.nodes for u in m.users) for t in call.values[m]]
        if not outs and call.order:
            outs = call.values[call.order[-1]][:1]
        ins = [t for ts in call.inputs.values() for t in ts]
        out_bytes = sum(nbytes(t) for t in outs)
        self.calls.append(LayerStats(
            name=call.name, type=call.type, call=call.call, index=call.index,
            input_shapes=tuple(tuple(t.shape) for t in ins), output_shape=tuple(outs[0].shape) if outs else (),
            params=sum(p for _, p in call.weights.values()), flops=call.flops,
            bytes_moved=sum(nbytes(t) for t in ins) + sum(b for b, _ in call.weights.values()) + out_bytes,
            activation_bytes=out_bytes, inputs_from=tuple(call.sources),
        ))
        self.footprints.append(footprint([*ins, *outs]))

    def _functional(self, n: fx.Node, path: str, ins: list[tuple[fx.Node, Any]], out: Any, flops: int) -> None:
        inputs = [t for _, value in ins for t in iter_tensors(value)]
        outputs = list(iter_tensors(out))
        srcs: list[str] = []
        for m, _ in ins:
            src = self.source(m)
            if src is not None and src not in srcs:
                srcs.append(src)
        op = n.target
        if not packet_name(op) or passes_through(op, inputs, outputs) or not inputs or not outputs:
            # getitem, views and reshapes compute nothing: their output keeps its producer.
            if srcs:
                self.producers[n] = srcs[0]
            return
        owner = path or FORWARD_OWNER
        base = f"{owner}.{op_kind(op)}"
        self.op_counts[base] += 1
        name = base if self.op_counts[base] == 1 else f"{base}#{self.op_counts[base]}"
        self.ops.append(FunctionalOp(
            name=name, op=str(op), owner=path, position=len(self.calls),
            input_shapes=tuple(tuple(t.shape) for t in inputs), output_shape=tuple(outputs[0].shape),
            flops=flops, bytes_moved=op_bytes(op, inputs, outputs),
            activation_bytes=sum(nbytes(t) for t in outputs), inputs_from=tuple(srcs),
        ))
        self.footprints.append(footprint([*inputs, *outputs]))
        self.producers[n] = name


def _placeholders(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "placeholder")


def analyse(module: nn.Module, args: tuple[torch.Tensor, ...], *, measure_time: bool, repeats: int,
            warmup: int, notes: list[str]) -> LayerReport:
    """Layer rows from a torch.export graph: nodes grouped by the innermost module of their stack."""
    if not isinstance(module, fx.GraphModule):
        raise TypeError(f"not a torch.export graph module: {type(module).__name__}")
    if _placeholders(module) != len(args):
        taken = TypeError(f"the exported graph takes {_placeholders(module)} input tensors, {len(args)} given")
        raise forward_error(taken, args)
    notes.append("torch.export module: no leaf modules run, so layers are rebuilt from each graph node's "
                 "nn_module_stack (the module it was traced in); the modules themselves are not kept, so lint "
                 "reads torch.nn layers rebuilt from the graph's arguments and cannot see custom modules' attributes")
    builder = _Builder(leaves=_leaf_paths(module), param_names={n for n, _ in module.named_parameters()})
    counter = FlopCounterMode(display=False)
    sync = sync_for(args)
    try:
        with torch.no_grad(), counter:
            result = _Runner(module, builder.on_node, sync=lambda: None, counter=counter).run(*args)
    except FORWARD_ERRORS as err:
        raise forward_error(err, args) from err
    builder.close()
    output_node = next(n for n in module.graph.nodes if n.op == "output")
    output_from: list[str] = []
    for m in output_node.all_input_nodes:
        src = builder.source(m)
        if src is not None and src not in output_from:
            output_from.append(src)
    del result
    layers = builder.calls
    forward_ms: float | None = None
    method = "not measured"
    if measure_time:
        runs: list[dict[str, float]] = []
        totals: list[float] = []
        per_run: dict[str, float] = defaultdict(float)

        def clock(n: fx.Node, ins: Any, out: Any, flops: int, ms: float) -> None:
            key = builder.call_of.get(n)
            if key is not None:
                per_run[key] += ms

        runner = _Runner(module, clock, sync=sync)
        with torch.no_grad():
            for run in range(warmup + repeats):
                per_run.clear()
                sync()
                t0 = time.perf_counter()
                runner.run(*args)
                sync()
                if run >= warmup:
                    totals.append((time.perf_counter() - t0) * 1e3)
                    runs.append(dict(per_run))
        middle = median_run(totals)
        forward_ms = totals[middle]
        timed = [_with_time(layer, runs[middle].get(layer.key), forward_ms) for layer in layers]
        layers = timed
        method = (f"torch.fx.Interpreter over the torch.export graph, time.perf_counter around each aten node, "
                  f"node times summed into the innermost module of its nn_module_stack; {runs_text(repeats, warmup)} "
                  f"({where_run(args, torch.get_num_threads())}); time_share is of the whole interpreted forward")
    return LayerReport(
        layers=tuple(layers), total_flops=counter.get_total_flops(),
        total_params=sum(p.numel() for p in module.parameters()),
        peak_activation_bytes=max(builder.footprints + [0]), time_method=method,
        functional_ops=tuple(builder.ops), output_from=tuple(output_from), forward_time_ms=forward_ms,
    )


def _with_time(layer: LayerStats, time_ms: float | None, forward_ms: float) -> LayerStats:
    share = time_ms / forward_ms if time_ms is not None and forward_ms else None
    return replace(layer, time_ms=time_ms, time_share=share)

