"""Per-layer facts for a torch model: FLOPs, bytes moved, intensity, activation size and time.

Three ways in, picked by what the module allows (`analyze_layers` says which in `time_method`):
an ordinary nn.Module runs with forward hooks on every leaf module; a torch.export module (no
leaf calls left, only aten nodes tagged with the module they came from) runs node by node
(planner.analysis.exported); a module that takes no hooks (TorchScript) is profiled op by op
(planner.analysis.ops).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from torch.utils.weak import WeakTensorKeyDictionary

from planner.analysis import exported, ops
from planner.analysis.stats import (
    FORWARD_ERRORS,
    FORWARD_OWNER,
    INPUT_NODE,
    FunctionalOp,
    LayerReport,
    LayerStats,
    Recorder,
    as_args,
    dtype_name,
    footprint,
    forward_error,
    iter_tensors,
    median_run,
    nbytes,
    op_bytes,
    op_kind,
    passes_through,
    runs_text,
    shape_of,
    sync_for,
    tensors_of,
    where_run,
)

__all__ = ["FORWARD_OWNER", "INPUT_NODE", "FunctionalOp", "LayerReport", "LayerStats", "analyze_layers"]

_GATHER_MODULES = (nn.Embedding, nn.EmbeddingBag)


def _leaf_modules(module: nn.Module) -> list[tuple[str, nn.Module]]:
    return [(name, m) for name, m in module.named_modules() if not any(True for _ in m.children())]


@dataclass
class _Call:
    """Mutable scratch for one leaf call while the structure pass runs."""

    name: str
    type: str
    call: int
    index: int
    params: int
    weight_bytes: int
    input_shapes: tuple[tuple[int, ...], ...]
    input_bytes: int
    inputs: list[torch.Tensor]
    inputs_from: tuple[str, ...]
    gathers: bool = False
    flops: int = 0
    output_shape: tuple[int, ...] = ()
    output_bytes: int = 0
    footprint: int = 0


@dataclass
class _Tracker:
    """Which module is running, who produced each tensor, and what each leaf call and functional op did."""

    producers: WeakTensorKeyDictionary = field(default_factory=WeakTensorKeyDictionary)
    stack: list[tuple[str, bool, _Call | None]] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    ops: list[FunctionalOp] = field(default_factory=list)
    call_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    op_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    op_footprints: list[int] = field(default_factory=list)

    def sources(self, values: Any) -> tuple[str, ...]:
        """The producers of the tensors in `values`, in order, without repeats."""
        found: list[str] = []
        for t in iter_tensors(values):
            src = self.producers.get(t)
            if src is not None and src not in found:
                found.append(src)
        return tuple(found)

    def enter(self, name: str, mod: nn.Module, leaf: bool, args: Any, kwargs: Any) -> None:
        """Push a module on the stack; a leaf starts a call record."""
        if not leaf:
            self.stack.append((name, False, None))
            return
        self.call_counts[name] += 1
        inputs = list(iter_tensors((args, kwargs)))
        weights = [*mod.parameters(), *mod.buffers()]
        call = _Call(
            name=name, type=type(mod).__name__, call=self.call_counts[name], index=len(self.calls),
            params=sum(p.numel() for p in mod.parameters()),
            weight_bytes=sum(nbytes(w) for w in weights),
            input_shapes=tuple(tuple(t.shape) for t in inputs),
            input_bytes=sum(nbytes(t) for t in inputs), inputs=inputs,
            inputs_from=self.sources((args, kwargs)), gathers=isinstance(mod, _GATHER_MODULES),
        )
        self.calls.append(call)
        self.stack.append((name, True, call))

    def leave(self, output: Any) -> None:
        """Pop the current module; a leaf's outputs get it as their producer."""
        if not self.stack:
            return
        _, leaf, call = self.stack.pop()
        if not leaf or call is None:
            return
        outputs = list(iter_tensors(output))
        call.output_shape = tuple(outputs[0].shape) if outputs else ()
        call.output_bytes = sum(nbytes(t) for t in outputs)
        if call.gathers:
            call.weight_bytes = min(call.weight_bytes, call.output_bytes)
        call.footprint = footprint([*call.inputs, *outputs])
        call.inputs = []  # drop references so activations can be freed as the forward goes on
        key = call.name if call.call == 1 else f"{call.name}#{call.call}"
        for t in outputs:
            self.producers[t] = key

    def on_op(self, func: Any, args: Any, kwargs: Any, out: Any, flops: int) -> None:
        """Charge an aten op to the running leaf, or record it as a functional op."""
        top = self.stack[-1] if self.stack else None
        if top is not None and top[1] and top[2] is not None:
            top[2].flops += flops
            return
        outputs = list(iter_tensors(out))
        inputs = list(iter_tensors((args, kwargs)))
        if not outputs or not inputs:
            return
        srcs = self.sources((args, kwargs))
        if passes_through(func, inputs, outputs):
            # A view computes nothing: its output carries its input's producer forward.
            for t in outputs:
                if srcs:
                    self.producers[t] = srcs[0]
            return
        owner = top[0] if top is not None and top[0] else FORWARD_OWNER
        base = f"{owner}.{op_kind(func)}"
        self.op_counts[base] += 1
        name = base if self.op_counts[base] == 1 else f"{base}#{self.op_counts[base]}"
        self.ops.append(FunctionalOp(
            name=name, op=str(func), owner="" if owner == FORWARD_OWNER else owner,
            position=len(self.calls), input_shapes=tuple(tuple(t.shape) for t in inputs),
            output_shape=tuple(outputs[0].shape), flops=flops, bytes_moved=op_bytes(func, inputs, outputs),
            activation_bytes=sum(nbytes(t) for t in outputs), inputs_from=srcs,
        ))
        self.op_footprints.append(footprint([*inputs, *outputs]))
        for t in outputs:
            self.producers[t] = name


def _structure_pass(module: nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[_Tracker, int, tuple[str, ...]]:
    """One forward under FlopCounterMode with hooks on every module: calls, ops, FLOPs, dataflow."""
    tracker = _Tracker()
    handles = []
    for name, mod in module.named_modules():
        leaf = not any(True for _ in mod.children())

        def pre(m: nn.Module, args: Any, kwargs: Any, _n: str = name, _leaf: bool = leaf) -> None:
            tracker.enter(_n, m, _leaf, args, kwargs)

        def post(m: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
            tracker.leave(output)

        handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(mod.register_forward_hook(post, with_kwargs=True))
    counter = FlopCounterMode(display=False)
    for x in tensors_of(args):
        tracker.producers[x] = INPUT_NODE
    try:
        with torch.no_grad(), counter, Recorder(counter, tracker.on_op):
            output = module(*args)
    except FORWARD_ERRORS as err:
        raise forward_error(err, args) from err
    finally:
        for h in handles:
            h.remove()
    return tracker, counter.get_total_flops(), tracker.sources(output)


def _timing_pass(module: nn.Module, args: tuple[torch.Tensor, ...], *, repeats: int,
                 warmup: int) -> tuple[dict[str, float], float]:
    """Every leaf call's time (ms) and the forward time, from the median of `repeats` runs."""
    sync = sync_for(args)
    samples: dict[str, float] = {}
    runs: list[dict[str, float]] = []
    counts: dict[str, int] = defaultdict(int)
    starts: dict[str, float] = {}
    handles = []
    for name, mod in _leaf_modules(module):

        def pre(m: nn.Module, args: Any, _n: str = name) -> None:
            sync()
            starts[_n] = time.perf_counter()

        def post(m: nn.Module, args: Any, output: Any, _n: str = name) -> None:
            sync()
            elapsed = (time.perf_counter() - starts[_n]) * 1e3
            counts[_n] += 1
            key = _n if counts[_n] == 1 else f"{_n}#{counts[_n]}"
            samples[key] = elapsed

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    totals: list[float] = []
    try:
        with torch.no_grad():
            for run in range(warmup + repeats):
                counts.clear()
                samples.clear()
                sync()
                t0 = time.perf_counter()
                module(*args)
                sync()
                if run >= warmup:
                    totals.append((time.perf_counter() - t0) * 1e3)
                    runs.append(dict(samples))
    finally:
        for h in handles:
            h.remove()
    middle = median_run(totals)
    return runs[middle], totals[middle]


def _hooked(module: nn.Module, args: tuple[torch.Tensor, ...], *, measure_time: bool, repeats: int,
            warmup: int, notes: list[str]) -> LayerReport:
    """The report of an ordinary nn.Module, from forward hooks on its leaf modules."""
    tracker, total_flops, output_from = _structure_pass(module, args)
    times: dict[str, float] = {}
    forward_ms: float | None = None
    if measure_time:
        times, forward_ms = _timing_pass(module, args, repeats=repeats, warmup=warmup)
    layers = []
    for c in tracker.calls:
        key = c.name if c.call == 1 else f"{c.name}#{c.call}"
        t = times.get(key)
        layers.append(LayerStats(
            name=c.name, type=c.type, call=c.call, index=c.index, input_shapes=c.input_shapes,
            output_shape=c.output_shape, params=c.params, flops=c.flops,
            bytes_moved=c.input_bytes + c.weight_bytes + c.output_bytes,
            activation_bytes=c.output_bytes, inputs_from=c.inputs_from, time_ms=t,
            time_share=(t / forward_ms) if t is not None and forward_ms else None,
        ))
    if not layers:
        notes.append("no leaf module ran in the forward (all work is in forward itself), so there are no "
                     "per-layer rows or times: the work is listed op by op as functional ops")
    method = "not measured"
    if measure_time:
        method = (f"forward pre/post hooks + time.perf_counter; {runs_text(repeats, warmup)} "
                  f"({where_run(args, torch.get_num_threads())}); time_share is of the whole hooked forward")
    return LayerReport(
        layers=tuple(layers), total_flops=total_flops,
        total_params=sum(p.numel() for p in module.parameters()),
        peak_activation_bytes=max([c.footprint for c in tracker.calls] + tracker.op_footprints + [0]),
        time_method=method, functional_ops=tuple(tracker.ops), output_from=output_from,
        forward_time_ms=forward_ms,
    )


def analyze_layers(module: nn.Module, example_inputs: torch.Tensor | tuple[torch.Tensor, ...], *,
                   measure_time: bool = True, repeats: int = 5, warmup: int = 1, threads: int | None = None,
                   hooks: bool = True) -> LayerReport:
    """Per-layer FLOPs (FlopCounterMode, 2 per MAC), bytes, intensity and, optionally, time.

    `example_inputs` is one tensor or a tuple of the forward's positional tensors. `hooks=False`
    (or a TorchScript module, which takes no hooks) profiles the forward op by op instead of
    module by module; a torch.export module is run node by node. `time_method` names the method
    and `notes` what could not be analysed.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"analyze_layers needs a torch nn.Module, got {type(module).__name__}")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    args = as_args(example_inputs)
    notes: list[str] = []
    analyse: Callable[..., LayerReport] = _hooked
    if exported.is_exported_module(module):
        analyse = exported.analyse
    elif isinstance(module, torch.jit.ScriptModule):
        notes.append("TorchScript module: it takes no forward hooks and keeps no Python module objects, so it "
                     "is analysed per aten op (torch.profiler), not per layer; architecture lint does not apply")
        analyse = ops.analyse
    elif not hooks:
        notes.append("forward hooks were turned off (hooks=False), so the model is analysed per aten op "
                     "(torch.profiler), not per layer")
        analyse = ops.analyse
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        report = analyse(module, args, measure_time=measure_time, repeats=repeats, warmup=warmup, notes=notes)
    finally:
        torch.set_num_threads(previous_threads)
    return dataclasses.replace(
        report, input_shape=shape_of(tensors_of(args)[0]), input_shapes=tuple(shape_of(a) for a in args),
        input_dtypes=tuple(dtype_name(a) for a in args), device=str(tensors_of(args)[0].device),
        notes=tuple(dict.fromkeys([*notes, *report.notes])),
    )
