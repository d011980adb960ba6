"""Per-layer facts for a torch model: FLOPs, bytes moved, intensity, activation size and time."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode
from torch.utils.weak import WeakTensorKeyDictionary

from planner.codec import to_data
from planner.errors import InputSpecError

INPUT_NODE = "<input>"
"""The producer name of the model's input tensor in `inputs_from`."""

FORWARD_OWNER = "<forward>"
"""The owner name of functional ops run directly in the root module's forward."""

# Friendlier names for aten ops a user knows by their Python spelling.
_FRIENDLY_OPS = {
    "upsample_bilinear2d": "interpolate", "upsample_nearest2d": "interpolate",
    "upsample_bicubic2d": "interpolate", "_upsample_bilinear2d_aa": "interpolate",
    "_upsample_bicubic2d_aa": "interpolate", "upsample_nearest1d": "interpolate",
    "upsample_linear1d": "interpolate", "upsample_nearest3d": "interpolate",
    "upsample_trilinear3d": "interpolate", "_upsample_nearest_exact2d": "interpolate",
}


@dataclass(frozen=True)
class LayerStats:
    """What one call of a leaf module computed and moved (a module called twice gives two entries)."""

    name: str
    type: str
    call: int
    index: int
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    params: int
    flops: int
    bytes_moved: int
    activation_bytes: int
    inputs_from: tuple[str, ...] = ()
    time_ms: float | None = None
    time_share: float | None = None

    @property
    def key(self) -> str:
        """A unique label: the module path, with `#n` for the n-th call of a reused module."""
        return self.name if self.call == 1 else f"{self.name}#{self.call}"

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOPs (2 per MAC) per byte moved."""
        return self.flops / self.bytes_moved if self.bytes_moved else 0.0

    # Kept: the JSON adds the derived `key` (first) and `intensity`, which results.json's layers carry.
    def to_dict(self) -> dict:
        """A JSON-ready dict of these facts."""
        return {
            "key": self.key, "name": self.name, "type": self.type, "call": self.call,
            "index": self.index, "input_shapes": [list(s) for s in self.input_shapes],
            "output_shape": list(self.output_shape), "params": self.params, "flops": self.flops,
            "bytes_moved": self.bytes_moved, "intensity": self.intensity,
            "activation_bytes": self.activation_bytes, "inputs_from": list(self.inputs_from),
            "time_ms": self.time_ms, "time_share": self.time_share,
        }


@dataclass(frozen=True)
class FunctionalOp:
    """A computing op run outside any leaf module (e.g. F.interpolate or a residual add in forward)."""

    name: str
    op: str
    owner: str
    position: int
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    flops: int
    bytes_moved: int
    activation_bytes: int = 0
    inputs_from: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The label other nodes use in `inputs_from` (the name, unique within a report)."""
        return self.name

    @property
    def kind(self) -> str:
        """The op's short name without overload or owner, e.g. `interpolate`, `add`, `gelu`."""
        return self.name.rsplit(".", 1)[-1].split("#", 1)[0]


@dataclass(frozen=True)
class LayerReport:
    """Per-layer facts of one forward pass, the functional ops between layers, and totals."""

    layers: tuple[LayerStats, ...]
    total_flops: int
    total_params: int
    # The largest input+output footprint of one layer or op: a lower bound on peak activation
    # memory that needs no allocator (CPU has none to ask).
    peak_activation_bytes: int
    time_method: str
    functional_ops: tuple[FunctionalOp, ...] = ()
    input_shape: tuple[int, ...] = ()
    output_from: tuple[str, ...] = ()
    forward_time_ms: float | None = None
    device: str = "cpu"

    @property
    def nodes(self) -> tuple[LayerStats | FunctionalOp, ...]:
        """Every layer call, then every functional op."""
        return (*self.layers, *self.functional_ops)

    @property
    def has_time(self) -> bool:
        """Whether per-layer times were measured."""
        return any(layer.time_ms is not None for layer in self.layers)

    @property
    def total_bytes_moved(self) -> int:
        """Bytes moved by all layers and functional ops, assuming nothing stays in cache between them."""
        return sum(n.bytes_moved for n in self.layers) + sum(op.bytes_moved for op in self.functional_ops)

    @property
    def unattributed_flops(self) -> int:
        """FLOPs counted in the forward pass but owned by neither a layer nor a functional op."""
        owned = sum(n.flops for n in self.layers) + sum(op.flops for op in self.functional_ops)
        return self.total_flops - owned

    def node(self, key: str) -> LayerStats | FunctionalOp | None:
        """The layer call or functional op with this key, or None."""
        for item in self.nodes:
            if item.key == key:
                return item
        return None

    # Kept: the JSON adds derived totals (total_bytes_moved, flops_unit) and orders keys its own way.
    def to_dict(self) -> dict:
        """A JSON-ready dict of the whole report."""
        return {
            "layers": [n.to_dict() for n in self.layers],
            "functional_ops": [to_data(op) for op in self.functional_ops],
            "total_flops": self.total_flops, "flops_unit": "FLOPs (2 per MAC)",
            "total_params": self.total_params, "total_bytes_moved": self.total_bytes_moved,
            "peak_activation_bytes": self.peak_activation_bytes, "time_method": self.time_method,
            "forward_time_ms": self.forward_time_ms, "input_shape": list(self.input_shape),
            "output_from": list(self.output_from), "device": self.device,
        }


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside a nested tuple/list/dict of outputs or arguments."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _footprint(tensors: list[torch.Tensor]) -> int:
    """Bytes held by distinct storages among these tensors (an in-place op's input and output count once)."""
    seen: set[int] = set()
    total = 0
    for t in tensors:
        ptr = t.untyped_storage().data_ptr()
        if ptr in seen:
            continue
        seen.add(ptr)
        total += _nbytes(t)
    return total


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
        for t in _tensors(values):
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
        inputs = list(_tensors((args, kwargs)))
        weights = [*mod.parameters(), *mod.buffers()]
        call = _Call(
            name=name, type=type(mod).__name__, call=self.call_counts[name], index=len(self.calls),
            params=sum(p.numel() for p in mod.parameters()),
            weight_bytes=sum(_nbytes(w) for w in weights),
            input_shapes=tuple(tuple(t.shape) for t in inputs),
            input_bytes=sum(_nbytes(t) for t in inputs), inputs=inputs,
            inputs_from=self.sources((args, kwargs)),
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
        outputs = list(_tensors(output))
        call.output_shape = tuple(outputs[0].shape) if outputs else ()
        call.output_bytes = sum(_nbytes(t) for t in outputs)
        call.footprint = _footprint([*call.inputs, *outputs])
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
        outputs = list(_tensors(out))
        inputs = list(_tensors((args, kwargs)))
        if not outputs or not inputs:
            return
        srcs = self.sources((args, kwargs))
        if func.is_view:
            # A view computes nothing: its output carries its input's producer forward.
            for t in outputs:
                if srcs:
                    self.producers[t] = srcs[0]
            return
        packet = func.overloadpacket.__name__.rstrip("_")
        kind = _FRIENDLY_OPS.get(packet, packet)
        owner = top[0] if top is not None and top[0] else FORWARD_OWNER
        base = f"{owner}.{kind}"
        self.op_counts[base] += 1
        name = base if self.op_counts[base] == 1 else f"{base}#{self.op_counts[base]}"
        self.ops.append(FunctionalOp(
            name=name, op=str(func), owner="" if owner == FORWARD_OWNER else owner,
            position=len(self.calls), input_shapes=tuple(tuple(t.shape) for t in inputs),
            output_shape=tuple(outputs[0].shape),
            flops=flops, bytes_moved=sum(_nbytes(t) for t in (*inputs, *outputs)),
            activation_bytes=sum(_nbytes(t) for t in outputs), inputs_from=srcs,
        ))
        self.op_footprints.append(_footprint([*inputs, *outputs]))
        for t in outputs:
            self.producers[t] = name


class _Recorder(TorchDispatchMode):
    """Sees every aten op; reads the FlopCounterMode total around each so FLOPs land on their owner."""

    def __init__(self, counter: FlopCounterMode, tracker: _Tracker) -> None:
        super().__init__()
        self.counter = counter
        self.tracker = tracker

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        before = self.counter.get_total_flops()
        out = func(*args, **kwargs)
        self.tracker.on_op(func, args, kwargs, out, self.counter.get_total_flops() - before)
        return out


def _structure_pass(module: nn.Module, x: torch.Tensor) -> tuple[_Tracker, int, tuple[str, ...]]:
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
    tracker.producers[x] = INPUT_NODE
    try:
        with torch.no_grad(), counter, _Recorder(counter, tracker):
            output = module(x)
    except RuntimeError as err:
        raise InputSpecError(
            f"the model failed on an input of shape {tuple(x.shape)} ({err})",
            "pass the input shape the model expects, e.g. --input-shape 1x3x224x224",
        ) from err
    finally:
        for h in handles:
            h.remove()
    return tracker, counter.get_total_flops(), tracker.sources(output)


def _sync_for(x: torch.Tensor) -> Callable[[], None]:
    if x.is_cuda:
        return torch.cuda.synchronize
    return lambda: None


def _timing_pass(module: nn.Module, x: torch.Tensor, *, repeats: int,
                 warmup: int) -> tuple[dict[str, float], float]:
    """Median per-call time (ms) of every leaf call, and median forward time, over `repeats` runs."""
    sync = _sync_for(x)
    samples: dict[str, list[float]] = defaultdict(list)
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
            samples[key].append(elapsed)

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    totals: list[float] = []
    try:
        with torch.no_grad():
            for run in range(warmup + repeats):
                counts.clear()
                sync()
                t0 = time.perf_counter()
                module(x)
                sync()
                if run < warmup:
                    samples.clear()
                else:
                    totals.append((time.perf_counter() - t0) * 1e3)
    finally:
        for h in handles:
            h.remove()
    return {k: statistics.median(v) for k, v in samples.items()}, statistics.median(totals)


def analyze_layers(module: nn.Module, example_input: torch.Tensor, *, measure_time: bool = True,
                   repeats: int = 5, warmup: int = 1, threads: int | None = None) -> LayerReport:
    """Per-leaf-module FLOPs (FlopCounterMode, 2 per MAC), bytes, intensity and, optionally, time."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"analyze_layers needs a torch nn.Module, got {type(module).__name__}")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        tracker, total_flops, output_from = _structure_pass(module, example_input)
        times: dict[str, float] = {}
        forward_ms: float | None = None
        if measure_time:
            times, forward_ms = _timing_pass(module, example_input, repeats=repeats, warmup=warmup)
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)

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
    if measure_time:
        where = "CUDA, synchronized at every layer boundary" if example_input.is_cuda else \
            f"CPU, {used_threads} thread{'s' if used_threads != 1 else ''}"
        method = (f"forward pre/post hooks + time.perf_counter; median of {repeats} run"
                  f"{'s' if repeats != 1 else ''} after {warmup} warm-up ({where}); "
                  "time_share is of the whole hooked forward")
    else:
        method = "not measured"
    return LayerReport(
        layers=tuple(layers), total_flops=total_flops,
        total_params=sum(p.numel() for p in module.parameters()),
        peak_activation_bytes=max([c.footprint for c in tracker.calls] + tracker.op_footprints + [0]),
        time_method=method, functional_ops=tuple(tracker.ops),
        input_shape=tuple(example_input.shape), output_from=output_from,
        forward_time_ms=forward_ms, device=str(example_input.device),
    )
