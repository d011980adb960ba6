"""Settle a model's inputs: what the model declares (ONNX graph, torch.export signature, INPUT_SPEC)
merged with what the user gave (`--input`, `--input-shape`), made concrete and checked."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from planner.errors import InputSpecError
from planner.models.spec import BATCH, SEQUENCE, ModelInputs, TensorSpec, default_axes

DEFAULT_SEQUENCE = 128
"""The sequence length a text model is measured at when neither the model nor the user fixes one."""

_SEQUENCE_WORDS = ("seq", "len", "token", "time")


def axis_name(index: int, param: str, *, rank: int, is_float: bool, batch_params: frozenset[str] = frozenset()) -> str:
    """Name one dynamic dimension: batch first (or wherever the file reuses the name it gives the
    batch, a recurrent state's axis 1), a sequence by its name or a text model's shape, else the
    file's own name for it."""
    if param.strip() == "?":
        param = ""  # paddle2onnx writes '?' for an axis it could not name: no name at all
    lowered = param.lower()
    if index == 0 or (param and param in batch_params):
        return BATCH
    if any(w in lowered for w in _SEQUENCE_WORDS) or (index == 1 and rank == 2 and not is_float):
        return SEQUENCE
    return param or f"dim{index}"


def concrete(name: str, dtype: str, dims: list[int | None], params: list[str],
             batch_params: frozenset[str] = frozenset()) -> TensorSpec:
    """A TensorSpec from declared dimensions (None where dynamic): batch 1, sequence 128, else ask.

    `batch_params` are the names the file gives the batch (axis 0 of its inputs): a later axis
    with one of them is the batch too (`state` [2, batch, 128]) and gets its size.
    """
    is_float = dtype.startswith(("float", "bfloat"))
    axes: list[str] = []
    shape: list[int] = []
    for i, (dim, param) in enumerate(zip(dims, params)):
        if dim is not None and dim > 0:
            axes.append("")
            shape.append(dim)
            continue
        axis = axis_name(i, param, rank=len(dims), is_float=is_float, batch_params=batch_params)
        axes.append(axis)
        if axis == BATCH:
            shape.append(1)
        elif axis == SEQUENCE:
            shape.append(DEFAULT_SEQUENCE)
        else:
            shape.append(0)
    # An unresolved dimension stays 0: settle() raises unless the user gives this input's shape.
    return TensorSpec(name=name, shape=tuple(shape), dtype=dtype, axes=tuple(axes))


def has_unresolved(spec: TensorSpec) -> bool:
    """Whether a declared input still has a dynamic dimension with no size (marked 0)."""
    return any(d == 0 for d in spec.shape)


def settle(declared: ModelInputs | None, given: ModelInputs | None, *, shape_only: bool,
           where: str) -> ModelInputs:
    """Merge the user's inputs into the declared ones, propagate batch and sequence, check completeness.

    `shape_only` marks `given` as the `--input-shape` form: one unnamed shape for the first input.
    """
    if declared is None:
        if given is None:
            raise InputSpecError(f"cannot tell what inputs {where} takes",
                                 "pass --input name:SHAPE:DTYPE for each input (e.g. --input "
                                 "x:1x3x224x224:float32), or --input-shape 1x3x224x224 for one float input")
        return given
    if given is None:
        merged = declared
    elif shape_only:
        first = declared.first
        shape = given.first.shape
        axes = first.axes if len(first.axes) == len(shape) else default_axes(shape, first.dtype)
        merged = _propagate(ModelInputs((replace(first, shape=shape, axes=axes), *declared.tensors[1:])),
                            {first.name})
    else:
        by_name = {t.name: t for t in declared.tensors}
        unknown = [t.name for t in given.tensors if t.name not in by_name]
        if unknown:
            raise InputSpecError(f"{where} has no input named {', '.join(map(repr, unknown))}",
                                 f"its inputs are: {declared.describe()}; e.g. {declared.example()}")
        for t in given.tensors:
            by_name[t.name] = _override(by_name[t.name], t)
        merged = _propagate(ModelInputs(tuple(by_name[t.name] for t in declared.tensors)),
                            {t.name for t in given.tensors})
    missing = [t for t in merged.tensors if has_unresolved(t)]
    if missing:
        names = "; ".join(f"{t.name} {open_axes(t)}" for t in missing)
        raise InputSpecError(f"{where} leaves dimensions open that the planner cannot guess: {names}",
                             f"give their sizes with --input, e.g. {_example_for(missing)}")
    return merged


def open_axes(spec: TensorSpec) -> str:
    """A tensor's open dimensions by position and the file's own name for each:
    'axis 2 (p2o.DynamicDimension.1) and axis 3 (p2o.DynamicDimension.2)'."""
    # dim{i} is the planner's own stand-in for an axis the file left unnamed: not a name to quote back.
    parts = [f"axis {i} ({a})" if a and a != f"dim{i}" else f"axis {i}"
             for i, (a, d) in enumerate(zip(spec.axes, spec.shape)) if d == 0]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _override(declared: TensorSpec, given: TensorSpec) -> TensorSpec:
    axes = declared.axes if len(declared.axes) == len(given.shape) else default_axes(given.shape, given.dtype)
    low, high, basis, value = given.low, given.high, given.range_basis, given.value
    if low is None and value is None and given.dtype == declared.dtype:
        low, high, basis, value = declared.low, declared.high, declared.range_basis, declared.value
    return replace(declared, shape=given.shape, dtype=given.dtype, axes=axes, low=low, high=high,
                   range_basis=basis, value=value)


def _propagate(inputs: ModelInputs, given: set[str]) -> ModelInputs:
    """Give inputs the user left alone the batch and sequence length of those the user set."""
    source = [t for t in inputs.tensors if t.name in given]
    if not source:
        return inputs
    out = []
    batch = source[0].shape[0] if source[0].dynamic_batch else None
    seq = next((t.shape[t.axes.index(SEQUENCE)] for t in source if SEQUENCE in t.axes), None)
    for t in inputs.tensors:
        if t.name not in given:
            if batch is not None:
                t = t.with_axis(BATCH, batch)  # axis 0, or a recurrent state's batch axis
            if seq is not None:
                t = t.with_axis(SEQUENCE, seq)
        out.append(t)
    return ModelInputs(tuple(out))


def _example_for(tensors: list[TensorSpec]) -> str:
    return " ".join(f"--input {t.example()}" for t in tensors)


def with_id_ranges(inputs: ModelInputs, rows: int | None) -> ModelInputs:
    """Token-id inputs without a range draw from [0, rows) of the model's embedding table (a scalar
    is a setting such as a sample rate, never a sequence of token ids)."""
    if rows is None:
        return inputs
    out = []
    for t in inputs.tensors:
        if t.shape and not t.is_float and t.low is None and t.fill() == "range" and t.dtype != "uint8":
            t = replace(t, low=0, high=rows, range_basis="the rows of the model's embedding table")
        out.append(t)
    return ModelInputs(tuple(out))


def embedding_rows(module: Any) -> int | None:
    """The row count of the model's first token-embedding table (nn.Embedding or aten.embedding)."""
    import torch

    for sub in module.modules():
        if isinstance(sub, torch.nn.Embedding):
            return int(sub.num_embeddings)
        # A scripted nn.Embedding is a RecursiveScriptModule that keeps the original class name.
        if getattr(sub, "original_name", "") == "Embedding" and hasattr(sub, "weight"):
            return int(sub.weight.shape[0])
    graph = getattr(module, "graph", None)
    nodes = getattr(graph, "nodes", None)
    if nodes is None or isinstance(module, torch.jit.ScriptModule):
        return None
    for node in nodes:
        if node.op == "call_function" and "embedding" in str(node.target):
            weight = node.args[0]
            val = getattr(weight, "meta", {}).get("val")
            if val is None and getattr(weight, "op", "") == "get_attr":
                val = _attr(module, str(weight.target))
            if val is not None and len(val.shape) == 2:
                return int(val.shape[0])
    return None


def _attr(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def onnx_declared(proto: Any) -> tuple[ModelInputs, int | None]:
    """An ONNX graph's inputs (names, element types, dim_params) and its embedding-table rows."""
    import numpy as np
    import onnx

    init = {i.name: i for i in proto.graph.initializer}
    declared = []
    for value in proto.graph.input:
        if value.name in init:
            continue
        ttype = value.type.tensor_type
        dtype = str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type)))
        dims = [d.dim_value if d.HasField("dim_value") else None for d in ttype.shape.dim]
        params = [d.dim_param if d.HasField("dim_param") else "" for d in ttype.shape.dim]
        declared.append((value.name, dtype, dims, params))
    # The name a converter gives the batch ("batch", "p2o.DynamicDimension.0") marks it on any axis.
    batch_params = frozenset(params[0] for _, _, dims, params in declared if dims and dims[0] is None and params[0])
    tensors = [concrete(*entry, batch_params=batch_params) for entry in declared]
    rows = None
    names = {t.name for t in tensors}
    for node in proto.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in names \
                and node.input[0] in init and len(init[node.input[0]].dims) == 2:
            rows = int(init[node.input[0]].dims[0])
            break
    return ModelInputs(tuple(tensors)), rows


def exported_declared(program: Any) -> ModelInputs:
    """A torch.export program's user inputs: names, dtypes, and which dimensions are symbolic."""
    import torch

    user = set(program.graph_signature.user_inputs)
    tensors = []
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in user:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        dtype = str(val.dtype).removeprefix("torch.")
        dims: list[int | None] = []
        params: list[str] = []
        hints: list[int | None] = []
        for d in val.shape:
            if isinstance(d, int):
                dims.append(int(d))
                params.append("")
                hints.append(None)
            else:
                dims.append(None)
                params.append(str(d))
                hint = getattr(getattr(d, "node", None), "hint", None)
                hints.append(int(hint) if isinstance(hint, int) else None)
        spec = concrete(node.name, dtype, dims, params)
        # The example the program was exported with is the natural size for open dimensions.
        shape = tuple(h if (a and h) else s for a, s, h in zip(spec.axes, spec.shape, hints))
        tensors.append(replace(spec, shape=shape))
    return ModelInputs(tuple(tensors))


def forward_argument_names(module: Any) -> list[str]:
    """The names of a module's forward arguments (self excluded), for error messages; [] if unknown."""
    import inspect

    try:
        schema = module.forward.schema  # TorchScript keeps its signature here
        return [a.name for a in schema.arguments if a.name != "self"]
    except (AttributeError, RuntimeError):
        pass
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is p.empty]


_SCALAR_TYPES = {"int": int, "float": float, "bool": bool}


def scalar_arguments(module: Any) -> dict[int, str]:
    """The positions (self excluded) of a TorchScript forward's arguments typed `int`, `float` or
    `bool`, with that type: such an argument takes a Python number, and a tensor there is refused.
    Empty for an eager module, whose arguments are tensors as far as the planner can tell."""
    try:
        schema = module.forward.schema
    except (AttributeError, RuntimeError):
        return {}
    arguments = [a for a in schema.arguments if a.name != "self"]
    return {i: str(a.type) for i, a in enumerate(arguments) if str(a.type) in _SCALAR_TYPES}


def torch_arguments(arrays: Iterable[Any], scalars: dict[int, str]) -> tuple[Any, ...]:
    """One feed's arrays as a forward's positional arguments: tensors, except a Python number
    where `scalars` (from `scalar_arguments`) says the argument is typed int, float or bool."""
    import numpy as np
    import torch

    out: list[Any] = []
    for i, array in enumerate(arrays):
        kind = scalars.get(i)
        if kind is None:
            out.append(torch.from_numpy(np.require(array, requirements="C")))
        else:
            out.append(scalar_value(array, kind))
    return tuple(out)


def scalar_value(array: Any, kind: str) -> Any:
    """A one-element array as the Python number a forward argument typed `kind` (int, float, bool) takes."""
    import numpy as np

    return _SCALAR_TYPES[kind](np.asarray(array).item())
