"""The per-layer report types and the tensor accounting every analysis path shares (bytes, footprints, inputs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from planner.errors import InputSpecError
from planner.models.spec import INPUT_FORM
from planner.results.analysis import LayerRecord

INPUT_NODE = "<input>"
"""The producer name of the model's input tensors in `inputs_from` (every positional input shares it)."""

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

# A lookup reads only the rows it gathers, not the whole table: charging the table would make
# every embedding look hopelessly memory-bound (a 30k-token vocabulary is ~90 MiB, a batch reads kBs).
GATHER_OPS = frozenset({"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"})
"""Ops (by overload packet name) whose weight traffic is the rows gathered, at most the output's bytes."""


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

    def record(self) -> LayerRecord:
        """These facts as results.json holds them, with the derived key and intensity."""
        return LayerRecord(key=self.key, name=self.name, type=self.type, call=self.call, index=self.index,
                           input_shapes=self.input_shapes, output_shape=self.output_shape, params=self.params,
                           flops=self.flops, bytes_moved=self.bytes_moved, intensity=self.intensity,
                           activation_bytes=self.activation_bytes, inputs_from=self.inputs_from,
                           time_ms=self.time_ms, time_share=self.time_share)


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
    input_shapes: tuple[tuple[int, ...], ...] = ()
    input_dtypes: tuple[str, ...] = ()
    # What could not be analysed, and why, in plain words (empty when nothing was left out).
    notes: tuple[str, ...] = ()

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


def iter_tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside a nested tuple/list/dict of outputs or arguments."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from iter_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_tensors(item)


def nbytes(tensor: torch.Tensor) -> int:
    """The bytes this tensor's elements take (its own view, not the whole storage)."""
    return tensor.numel() * tensor.element_size()


def storage_key(tensor: torch.Tensor) -> int:
    """An id of the memory a tensor lives in: views and in-place results share their input's."""
    return tensor.untyped_storage().data_ptr()


def footprint(tensors: list[torch.Tensor]) -> int:
    """Bytes held by distinct storages among these tensors (an in-place op's input and output count once)."""
    seen: set[int] = set()
    total = 0
    for t in tensors:
        ptr = storage_key(t)
        if ptr in seen:
            continue
        seen.add(ptr)
        total += nbytes(t)
    return total


def op_kind(func: Any) -> str:
    """A short, friendly name of an aten op (`add`, `interpolate`), without overload or in-place underscore."""
    packet = getattr(func, "overloadpacket", None)
    name = packet.__name__ if packet is not None else getattr(func, "__name__", str(func))
    name = name.rstrip("_")
    return _FRIENDLY_OPS.get(name, name)


def packet_name(func: Any) -> str:
    """The overload packet name of an aten op (`embedding`), or '' for something that is not an op."""
    packet = getattr(func, "overloadpacket", None)
    return packet.__name__ if packet is not None else ""


def passes_through(func: Any, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> bool:
    """Whether an op only re-labels its input (a view, reshape or no-op cast): it computes and moves nothing.

    `is_view` misses reshape-like ops that return aliases (`_unsafe_view`, `flatten`, a same-dtype
    `to`), so an output sharing an input's memory counts too, unless the op is in-place (`relu_`).
    """
    if getattr(func, "is_view", False):
        return True
    if packet_name(func).endswith("_") or not outputs or not inputs:
        return False
    sources = {storage_key(t) for t in inputs}
    return all(storage_key(t) in sources and t.numel() for t in outputs)


def op_bytes(func: Any, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> int:
    """Bytes an op reads and writes: all inputs and outputs, but only the gathered rows of a lookup table."""
    moved = sum(nbytes(t) for t in (*inputs, *outputs))
    if packet_name(func) in GATHER_OPS and inputs and outputs:
        table = nbytes(inputs[0])
        moved -= table - min(table, nbytes(outputs[0]))
    return moved


_NUMBERS = (int, float, bool)


def as_args(example_inputs: torch.Tensor | tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """The positional arguments of the forward: one tensor, or a tuple/list of tensors, among which
    Python numbers may stand where a TorchScript forward types an argument `int` or `float`."""
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    args = tuple(example_inputs)
    if not any(isinstance(a, torch.Tensor) for a in args) \
            or not all(isinstance(a, (torch.Tensor, *_NUMBERS)) for a in args):
        kinds = ", ".join(type(a).__name__ for a in args) or "nothing"
        raise TypeError(f"analyze_layers needs a tensor or a tuple of tensors, got {kinds}")
    return args


def tensors_of(args: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
    """The tensors among a forward's arguments (a TorchScript `int sr` is a plain number)."""
    return tuple(a for a in args if isinstance(a, torch.Tensor))


def shape_of(arg: Any) -> tuple[int, ...]:
    """An argument's shape: a tensor's, or () for a plain number."""
    return tuple(arg.shape) if isinstance(arg, torch.Tensor) else ()


def dtype_name(tensor: Any) -> str:
    """The dtype as the CLI spells it (`float32`, `int64`); a plain Python number's type (`int`)."""
    if not isinstance(tensor, torch.Tensor):
        return type(tensor).__name__
    return str(tensor.dtype).removeprefix("torch.")


def describe_inputs(args: tuple[Any, ...]) -> str:
    """The inputs' shapes and dtypes in words, e.g. `(1, 64) int64, (1, 64) int64` (`int 16000` for a number)."""
    return ", ".join(f"{tuple(t.shape)} {dtype_name(t)}" if isinstance(t, torch.Tensor) else f"{dtype_name(t)} {t}"
                     for t in args)


def forward_error(err: Exception, args: tuple[torch.Tensor, ...]) -> InputSpecError:
    """An actionable error for a forward that failed on these inputs, naming what was given."""
    if len(args) == 1 and isinstance(args[0], torch.Tensor):
        what = f"an input of shape {tuple(args[0].shape)} ({dtype_name(args[0])})"
    else:
        what = f"{len(args)} inputs of shapes and dtypes {describe_inputs(args)}"
    return InputSpecError(
        f"the model failed on {what} ({err})",
        f"pass the inputs the model expects, in its forward's order: --input {INPUT_FORM} for each "
        "(--input-shape AxBx... is the short form for one float32 input)",
    )


FORWARD_ERRORS = (RuntimeError, IndexError, TypeError, ValueError)
"""What a forward raises on inputs it does not accept (bad shape, token id out of range, arity)."""


def sync_for(args: tuple[torch.Tensor, ...]) -> Callable[[], None]:
    """A function that waits for queued GPU work when the inputs live on CUDA, else does nothing."""
    if any(a.is_cuda for a in tensors_of(args)):
        return torch.cuda.synchronize
    return lambda: None


def where_run(args: tuple[torch.Tensor, ...], threads: int) -> str:
    """The device and thread count the times were taken on, in words."""
    if any(a.is_cuda for a in tensors_of(args)):
        return "CUDA, synchronized at every layer boundary"
    return f"CPU, {threads} thread{'s' if threads != 1 else ''}"


def runs_text(repeats: int, warmup: int) -> str:
    """`median of 5 runs by forward time after 1 warm-up; ...` for the time_method strings."""
    return (f"median of {repeats} run{'s' if repeats != 1 else ''} by forward time after {warmup} warm-up; every "
            "row's time is from that same run")


def median_run(totals: list[float]) -> int:
    """The index of the run whose forward time is the median (the lower middle one of an even count).

    Rows and forward are taken from this one run: medians taken row by row need not add up to the
    median forward, and a table whose shares sum above 100% contradicts itself.
    """
    order = sorted(range(len(totals)), key=totals.__getitem__)
    return order[(len(order) - 1) // 2]


OpSink = Callable[[Any, Any, Any, Any, int], None]
"""Told of every aten op: (func, args, kwargs, output, FLOPs it counted)."""


class Recorder(TorchDispatchMode):
    """Sees every aten op; reads the FlopCounterMode total around each so FLOPs land on their owner."""

    def __init__(self, counter: FlopCounterMode, on_op: OpSink) -> None:
        super().__init__()
        self.counter = counter
        self.on_op = on_op

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        before = self.counter.get_total_flops()
        out = func(*args, **kwargs)
        self.on_op(func, args, kwargs, out, self.counter.get_total_flops() - before)
        return out
