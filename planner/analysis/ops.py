"""Per-op analysis for modules that take no forward hooks (TorchScript): torch.profiler times, FLOPs by op.

A ScriptModule runs its graph in C++, so there are no leaf module calls to hook. What is left is
the sequence of ops the graph calls (`aten::conv2d`, `aten::linear`, ...), which torch.profiler
records with their inclusive CPU time. FlopCounterMode and a TorchDispatchMode still see every op
at dispatch level (`aten.convolution`, `aten.addmm`), one level below the graph's ops; each of
those is matched, in order, to the graph op whose profiler subtree holds it, so every row gets
the FLOPs, bytes and shapes of the work it dispatched.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.flop_counter import FlopCounterMode
from torch.utils.weak import WeakTensorKeyDictionary

from planner.analysis.stats import (
    FORWARD_ERRORS,
    GATHER_OPS,
    INPUT_NODE,
    LayerReport,
    LayerStats,
    Recorder,
    forward_error,
    iter_tensors,
    median_run,
    nbytes,
    packet_name,
    passes_through,
    runs_text,
    storage_key,
    tensors_of,
)

_MARK = "planner.analysis.run"
"""The record_function label around each profiled forward, to find the runs among the events."""

_WINDOW = 2
"""How many graph ops past the last match a dispatch op may be found in before it counts as unmatched."""

# TorchScript's forward records ("forward") have no namespace; prim:: records are interpreter steps.
_NOT_OPS = ("prim::",)

_INPUT = -1


@dataclass
class _Tensor:
    """A tensor the structure pass saw: where it came from, and the real tensor behind a view."""

    shape: tuple[int, ...]
    bytes: int
    producer: int | None  # op index, _INPUT for a model input, None for a weight or constant
    param: bool
    origin: int
    via: int | None = None  # the view op that made this tensor out of `src`
    src: int | None = None


@dataclass
class _Op:
    """One dispatch-level op call: what it read, wrote and counted."""

    name: str
    func: Any
    flops: int
    inputs: list[int]
    outputs: list[int]
    through: bool


@dataclass
class _OpLog:
    """Every dispatch-level op of one forward, with the dataflow between them."""

    params: set[int]
    ids: WeakTensorKeyDictionary = field(default_factory=WeakTensorKeyDictionary)
    tensors: list[_Tensor] = field(default_factory=list)
    ops: list[_Op] = field(default_factory=list)

    def uid(self, t: torch.Tensor, producer: int | None = None) -> int:
        """The id of a tensor, registering it (as a weight or constant unless told) on first sight."""
        found = self.ids.get(t)
        if found is not None:
            return found
        uid = len(self.tensors)
        param = producer is None and storage_key(t) in self.params
        self.tensors.append(_Tensor(tuple(t.shape), nbytes(t), producer, param, uid))
        self.ids[t] = uid
        return uid

    def on_op(self, func: Any, args: Any, kwargs: Any, out: Any, flops: int) -> None:
        """Log one op; a view's output stands for the tensor it views."""
        inputs = list(iter_tensors((args, kwargs)))
        outputs = list(iter_tensors(out))
        index = len(self.ops)
        in_ids = [self.uid(t) for t in inputs]
        through = passes_through(func, inputs, outputs)
        out_ids = []
        for t in outputs:
            if through and in_ids:
                src = self.tensors[in_ids[0]]
                uid = len(self.tensors)
                self.tensors.append(_Tensor(tuple(t.shape), nbytes(t), src.producer, src.param, src.origin,
                                            via=index, src=in_ids[0]))
                self.ids[t] = uid
            else:
                uid = self.uid(t, index)
                # An in-place op hands back its input: from here on this op produced it.
                self.tensors[uid] = _Tensor(tuple(t.shape), nbytes(t), index, False, uid)
            out_ids.append(uid)
        name = f"{getattr(func, 'namespace', 'aten')}::{packet_name(func) or _op_name(func)}"
        self.ops.append(_Op(name, func, flops, in_ids, out_ids, through))


def _op_name(func: Any) -> str:
    """A printable name for an op that is not an aten overload (a higher-order op, a Python callable)."""
    return getattr(func, "__name__", None) or str(func)


def _is_op(event: Any) -> bool:
    return "::" in event.name and not event.name.startswith(_NOT_OPS)


def _graph_ops(event: Any) -> list[Any]:
    """The outermost ops under a profiler event: what the model's graph (or Python forward) called."""
    found = []
    for child in sorted(event.cpu_children, key=lambda e: e.time_range.start):
        if _is_op(child):
            found.append(child)
        else:
            found.extend(_graph_ops(child))
    return found


@dataclass(frozen=True)
class _Flat:
    """One profiler event in pre-order: its name, which graph op it sits under, where its subtree ends."""

    name: str
    top: int
    end: int


def _flatten(tops: list[Any]) -> list[_Flat]:
    flat: list[_Flat] = []

    def visit(event: Any, top: int) -> None:
        at = len(flat)
        flat.append(_Flat(event.name, top, 0))
        for child in sorted(event.cpu_children, key=lambda e: e.time_range.start):
            visit(child, top)
        flat[at] = _Flat(event.name, top, len(flat))

    for i, event in enumerate(tops):
        visit(event, i)
    return flat


def _align(ops: list[_Op], tops: list[Any]) -> list[int | None]:
    """The graph op each dispatch op ran under (None when it could not be found).

    Dispatch ops appear in the profiler in the same order, as the first op of their name on the
    way down from a graph op; a matched op's subtree is skipped (its internals are not dispatched
    to Python modes). The search stops a couple of graph ops ahead so one op the profiler did not
    record cannot swallow the rest.
    """
    flat = _flatten(tops)
    owners: list[int | None] = []
    pos = 0
    for op in ops:
        limit = (flat[pos].top if pos < len(flat) else len(tops)) + _WINDOW
        j = pos
        while j < len(flat) and flat[j].top <= limit and flat[j].name != op.name:
            j += 1
        if j < len(flat) and flat[j].top <= limit:
            owners.append(flat[j].top)
            pos = flat[j].end
        else:
            owners.append(None)
    return owners


@contextlib.contextmanager
def _native_stderr_quiet() -> Iterator[None]:
    """Silence what the profiler's native library writes to file descriptor 2 while it runs.

    Kineto prints start/stop trace lines and, without a GPU, a device-count error on every use;
    they would land in the middle of the planner's progress output and mean nothing to a user.
    Python errors still propagate as exceptions.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _profile(module: nn.Module, args: tuple[torch.Tensor, ...], runs: int) -> list[Any]:
    """The runs' marker events of `runs` profiled forwards, in order."""
    with _native_stderr_quiet():
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(runs):
                with record_function(f"{_MARK}{i}"):
                    module(*args)
        marks = [e for e in prof.events() if e.name.startswith(_MARK) and e.cpu_parent is None]
    return sorted(marks, key=lambda e: e.time_range.start)


@dataclass
class _Row:
    """The dispatch ops of one graph op call, then its facts."""

    name: str
    ops: list[int]
    call: int = 1


def _rows(log: _OpLog, owners: list[int | None], tops: list[Any]) -> dict[int, _Row]:
    """One row per graph op call that dispatched real work (views and reshapes alone make none)."""
    members: dict[int, list[int]] = defaultdict(list)
    for i, top in enumerate(owners):
        if top is not None:
            members[top].append(i)
    rows: dict[int, _Row] = {}
    counts: dict[str, int] = defaultdict(int)
    for top in sorted(members):
        if all(log.ops[i].through or not log.ops[i].outputs for i in members[top]):
            continue  # views, reshapes and scalar reads (`item`) do no work worth a row
        name = tops[top].name
        counts[name] += 1
        rows[top] = _Row(name, members[top], counts[name])
    return rows


def _used_outside(log: _OpLog, row_of: dict[int, int], outputs: list[int]) -> set[int]:
    """Tensors (and the tensors they view) read by an op of another row, or returned by the model."""
    used: set[int] = set()

    def mark(u: int | None, reader_row: int | None) -> None:
        while u is not None:
            t = log.tensors[u]
            if reader_row is not None and t.via is not None and row_of.get(t.via) == reader_row:
                return  # a view taken inside the reading row: its input is what crosses over
            used.add(u)
            u = t.src

    for u in outputs:
        mark(u, None)
    for i, op in enumerate(log.ops):
        if op.through:
            continue
        for u in op.inputs:
            p = log.tensors[u].producer
            if p is not None and p >= 0 and row_of.get(p) != row_of.get(i):
                mark(u, row_of.get(i))
    return used


def _stats(log: _OpLog, rows: dict[int, _Row], outputs: list[int]) -> tuple[list[LayerStats], list[int], list[str]]:
    """LayerStats (untimed) for every row, each row's footprint, and the model output's producers."""
    row_of = {i: top for top, row in rows.items() for i in row.ops}
    key_of = {top: row.name if row.call == 1 else f"{row.name}#{row.call}" for top, row in rows.items()}
    used = _used_outside(log, row_of, outputs)

    def key(producer: int | None) -> str:
        if producer == _INPUT:
            return INPUT_NODE
        return key_of.get(row_of.get(producer, -2), "") if producer is not None else ""

    layers, footprints = [], []
    for index, row in enumerate(rows.values()):
        mine = set(row.ops)
        ext: dict[int, _Tensor] = {}
        weights: dict[int, tuple[_Tensor, int]] = {}
        outs: dict[int, _Tensor] = {}
        for i in row.ops:
            op = log.ops[i]
            out_bytes = sum(log.tensors[u].bytes for u in op.outputs)
            for pos, u in enumerate(op.inputs):
                t = log.tensors[u]
                if t.via in mine:
                    continue  # reshaped inside this row: the reshape's own input is what came in
                if t.producer is None:
                    gathered = pos == 0 and packet_name(op.func) in GATHER_OPS
                    charge = min(t.bytes, out_bytes) if gathered else t.bytes
                    weights[t.origin] = (t, max(charge, weights.get(t.origin, (t, 0))[1]))
                elif t.producer not in mine:
                    ext.setdefault(u, t)  # by tensor, not storage: q, k and v may be views of one qkv
            for u in op.outputs:
                if u in used:
                    outs[log.tensors[u].origin] = log.tensors[u]  # the last reshape of a result wins
        if not outs:
            last = next(log.ops[i] for i in reversed(row.ops) if not log.ops[i].through)
            outs = {u: log.tensors[u] for u in last.outputs[:1]}
        out = next(iter(outs.values()), None)
        sources = list(dict.fromkeys(k for k in (key(t.producer) for t in ext.values()) if k))
        out_bytes = sum(t.bytes for t in outs.values())
        in_bytes = sum(t.bytes for t in ext.values())
        layers.append(LayerStats(
            name=row.name, type=row.name, call=row.call, index=index,
            input_shapes=tuple(t.shape for t in ext.values()), output_shape=out.shape if out else (),
            params=sum(math.prod(t.shape) for t, _ in weights.values() if t.param),
            flops=sum(log.ops[i].flops for i in row.ops),
            bytes_moved=in_bytes + sum(c for _, c in weights.values()) + out_bytes,
            activation_bytes=out_bytes, inputs_from=tuple(sources),
        ))
        footprints.append(in_bytes + out_bytes)
    output_from = list(dict.fromkeys(k for k in (key(log.tensors[u].producer) for u in outputs) if k))
    return layers, footprints, output_from


def _structure(module: nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[_OpLog, int, list[int]]:
    """One forward under FlopCounterMode and an op log: every dispatch op, its FLOPs and dataflow."""
    log = _OpLog(params={storage_key(p) for p in module.parameters()})
    for x in tensors_of(args):
        log.uid(x, _INPUT)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter, Recorder(counter, log.on_op):
        output = module(*args)
    outputs = [log.ids[t] for t in iter_tensors(output) if t in log.ids]
    return log, counter.get_total_flops(), outputs


def analyse(module: nn.Module, args: tuple[torch.Tensor, ...], *, measure_time: bool, repeats: int,
            warmup: int, notes: list[str]) -> LayerReport:
    """Rows per graph op call (FLOPs, bytes, shapes from dispatch, time from torch.profiler)."""
    script = isinstance(module, torch.jit.ScriptModule)
    # TorchScript's profiling executor rewrites the graph after its first runs: settle it first,
    # so the logged ops and the profiled ones are the same program.
    settle = max(warmup, 2) if script else (warmup if measure_time else 0)
    try:
        with torch.no_grad():
            for _ in range(settle):
                module(*args)
        log, total_flops, outputs = _structure(module, args)
    except FORWARD_ERRORS as err:
        raise forward_error(err, args) from err
    if script and total_flops == 0:
        notes.append("FlopCounterMode counted no FLOPs through this TorchScript module (it sees matmuls and "
                     "convolutions only): FLOPs are left at 0, not estimated")
    if any(a.is_cuda for a in tensors_of(args)):
        notes.append("per-op times are CPU-side (dispatch and launch) times from torch.profiler's CPU activity; "
                     "CUDA kernel times are not in them")
    runs = repeats if measure_time else 1
    try:
        marks = _profile(module, args, runs)
    except RuntimeError as err:
        marks = []
        notes.append(f"torch.profiler failed ({err}): no per-op rows or times, FLOPs are in the total only")
    rows: dict[int, _Row] = {}
    tops: list[Any] = []
    if marks:
        tops = _graph_ops(marks[0])
        owners = _align(log.ops, tops)
        rows = _rows(log, owners, tops)
        lost = [op for op, owner in zip(log.ops, owners) if owner is None and not op.through]
        if lost:
            flops = sum(op.flops for op in lost)
            notes.append(f"{len(lost)} dispatched op call{'s' if len(lost) != 1 else ''} ({flops} FLOPs) could not "
                         "be matched to an op the profiler recorded: counted in the total only")
    layers, footprints, output_from = _stats(log, rows, outputs)
    forward_ms: float | None = None
    method = "not measured"
    if measure_time and marks:
        row_times: list[list[float]] = []
        totals = []
        names = [e.name for e in tops]
        skipped = 0
        for mark in marks:
            run_tops = _graph_ops(mark)
            if [e.name for e in run_tops] != names:
                skipped += 1
                continue
            totals.append(mark.cpu_time_total / 1e3)
            row_times.append([run_tops[top].cpu_time_total / 1e3 for top in rows])
        if skipped:
            notes.append(f"{skipped} of {len(marks)} profiled runs called a different op sequence and were left out")
        if totals:
            middle = median_run(totals)
            forward_ms, times = totals[middle], row_times[middle]
            layers = [_timed(layer, t, forward_ms) for layer, t in zip(layers, times)]
            threads = torch.get_num_threads()
            method = (f"torch.profiler per-op CPU time (CPU activity): each row is one op call the "
                      f"{'TorchScript graph' if script else 'forward'} made, timed inclusive of the aten ops "
                      f"it dispatched to (self CPU time of the whole subtree); {runs_text(repeats, settle)} "
                      f"(CPU, {threads} thread{'s' if threads != 1 else ''}); profiler overhead included; "
                      "time_share is of the whole profiled forward")
    return LayerReport(
        layers=tuple(layers), total_flops=total_flops,
        total_params=sum(p.numel() for p in module.parameters()),
        peak_activation_bytes=max(footprints + [0]), time_method=method,
        output_from=tuple(output_from), forward_time_ms=forward_ms,
    )


def _timed(layer: LayerStats, time_ms: float, forward_ms: float) -> LayerStats:
    return replace(layer, time_ms=time_ms, time_share=time_ms / forward_ms if forward_ms else None)
