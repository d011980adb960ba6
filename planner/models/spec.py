"""What a model is fed: a list of named tensors, each with a shape, dtype, named axes and values.

A `TensorSpec` is one input; `ModelInputs` is the ordered list a model takes (a torch module's
positional arguments, or an ONNX graph's inputs). Axis names say which dimensions may vary:
``batch`` (dimension 0 of every input when the model accepts any batch) and ``sequence`` (the
token axis of a text model). Values come from a range (token ids in [0, vocab)) or a rule chosen
by name and dtype (masks of ones, images in a normal range).

The CLI form of one input is ``name:1x128:int64[:0-30522]`` (the range's upper end excluded);
an empty shape is a scalar (``sr::int64:16000``), and one value instead of a range fixes every
element at it (``temp::float32:0.7``; ``LOW-HIGH`` with LOW equal to HIGH means that value too).
``--input-shape 1x3x224x224`` stays as the short form for one float input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Iterable

from planner.errors import InputSpecError

BATCH = "batch"
SEQUENCE = "sequence"
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
DEFAULT_INT_RANGE = (0, 100)
"""Integer inputs with no known range draw from here (labelled an assumption where shown)."""

INPUT_FORM = "name:SHAPE:DTYPE[:LOW-HIGH|:VALUE]"
_MASK_NAMES = ("mask",)
_ZERO_NAMES = ("token_type", "segment")


@dataclass(frozen=True, kw_only=True)
class TensorSpec:
    """One input tensor: name, concrete shape, dtype, per-dimension axis names and value range.

    `axes` has one entry per dimension: ``"batch"``, ``"sequence"``, another dynamic dimension's
    name, or ``""`` for a fixed one. An empty `shape` is a scalar. `low`/`high` bound integer values
    (high excluded); `range_basis` says where the range came from (the CLI, the embedding table, an
    assumption). `value`, when set, fixes every element at it (a sample rate, a temperature) and
    takes precedence over any range.
    """

    name: str = "x"
    shape: tuple[int, ...]
    dtype: str = "float32"
    axes: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    range_basis: str = ""
    value: int | float | None = None

    def __post_init__(self) -> None:
        if not self.axes:
            object.__setattr__(self, "axes", default_axes(self.shape, self.dtype))
        if len(self.axes) != len(self.shape):
            raise InputSpecError(f"input {self.name!r} has {len(self.shape)} dimensions but "
                                 f"{len(self.axes)} axis names", "give one axis name per dimension")

    @property
    def is_float(self) -> bool:
        """Whether values are floating point (drawn from a normal distribution)."""
        return self.dtype in FLOAT_DTYPES

    @property
    def dynamic_batch(self) -> bool:
        """Whether dimension 0 is a batch axis that may vary."""
        return bool(self.axes) and self.axes[0] == BATCH

    def axis_of(self, name: str) -> int | None:
        """The index of the dimension with this axis name, or None."""
        return self.axes.index(name) if name in self.axes else None

    def with_axis(self, name: str, size: int) -> "TensorSpec":
        """The same tensor with every dimension named `name` set to `size`."""
        if name not in self.axes:
            return self
        return replace(self, shape=tuple(size if a == name else d for a, d in zip(self.axes, self.shape)))

    def fill(self) -> str:
        """How values are drawn: "fixed" (`value`), "normal", "range" (integers in `int_range()`), "ones" or "zeros"."""
        if self.value is not None:
            return "fixed"
        if self.is_float:
            return "normal"
        if self.low is not None and self.high is not None:
            return "range"
        lowered = self.name.lower()
        if self.dtype == "bool" or any(m in lowered for m in _MASK_NAMES):
            return "ones"
        if any(z in lowered for z in _ZERO_NAMES):
            return "zeros"
        return "range"

    def int_range(self) -> tuple[int, int, str]:
        """The integer range [low, high) values are drawn from, and where it came from."""
        if self.low is not None and self.high is not None:
            return self.low, self.high, self.range_basis
        if self.dtype == "uint8":
            return 0, 256, "the whole uint8 range"
        return (*DEFAULT_INT_RANGE, "assumed: no range known")

    def value_rule(self) -> str:
        """How values are generated, in words (for inspect and the report)."""
        fill = self.fill()
        if fill == "fixed":
            return f"fixed at {format_value(self.value)}"
        if fill == "normal":
            return "normal(0, 1)"
        if fill == "ones":
            return "ones (nothing masked)"
        if fill == "zeros":
            return "zeros (one segment)"
        low, high, basis = self.int_range()
        return f"integers in [{low}, {high})" + (f" ({basis})" if basis else "")

    def cli(self) -> str:
        """The `--input` form that reproduces this tensor exactly."""
        text = f"{self.name}:{'x'.join(map(str, self.shape))}:{self.dtype}"
        if self.value is not None:
            text += f":{format_value(self.value)}"
        elif self.low is not None and self.high is not None:
            text += f":{self.low}-{self.high}"
        return text

    def example(self) -> str:
        """The `--input` form for a fix text: `cli()`, with a size in place of any open (0) dimension
        and a value for a scalar integer whose values are only assumed."""
        shape = tuple(d or guess_dim(self, i) for i, d in enumerate(self.shape))
        spec = replace(self, shape=shape)
        if not self.shape and not self.is_float and self.fill() == "range" and self.low is None:
            return f"{self.name}::{self.dtype}:{guess_value(self.name)}"
        return spec.cli()

    def describe(self) -> str:
        """One line for errors and inspect: name, dtype and shape with axis names (and a fixed value)."""
        # dim{i} stands in for an axis the file left unnamed: not a name worth showing.
        dims = ", ".join(f"{a}={d}" if a and a != f"dim{i}" else str(d)
                         for i, (a, d) in enumerate(zip(self.axes, self.shape)))
        fixed = f" fixed at {format_value(self.value)}" if self.value is not None else ""
        return f"{self.name} {self.dtype} [{dims}]{fixed}"


SAMPLE_RATE_NAMES = ("sr", "sample_rate", "sampling_rate", "samplerate", "rate", "fs")


def names_sample_rate(name: str) -> bool:
    """Whether an input's name says it is an audio sample rate (`sr`, `sample_rate`, ...)."""
    return name.lower() in SAMPLE_RATE_NAMES or "sample_rate" in name.lower()


def guess_value(name: str) -> str:
    """A value to suggest for a scalar input, by its name: 16000 for a sample rate, else `V`, which the
    fix text tells the user to replace with the value the model takes (only the user knows it)."""
    return "16000" if names_sample_rate(name) else "V"


def guess_dim(spec: TensorSpec, axis: int) -> int:
    """A size to suggest for an open dimension: 224 for an image's height and width, else 128
    (never 0: a zero-sized tensor is no example of anything)."""
    if len(spec.shape) == 4 and spec.is_float and axis >= 2:
        return 224
    return 1 if spec.axes and spec.axes[axis] == BATCH else 128


def format_value(value: int | float | None) -> str:
    """A fixed value as `--input` writes it: integers bare, floats in their shortest exact form (0.7, 1.0)."""
    return str(value)


def default_axes(shape: tuple[int, ...], dtype: str) -> tuple[str, ...]:
    """Axis names when none are known: batch first; the second axis of a 2-D integer input is a sequence."""
    if not shape:
        return ()
    axes = [BATCH] + [""] * (len(shape) - 1)
    if len(shape) == 2 and dtype not in FLOAT_DTYPES:
        axes[1] = SEQUENCE
    return tuple(axes)


@dataclass(frozen=True)
class ModelInputs:
    """The ordered inputs of a model (positional arguments / graph inputs)."""

    tensors: tuple[TensorSpec, ...]

    def __post_init__(self) -> None:
        if not self.tensors:
            raise InputSpecError("a model needs at least one input", f"pass --input {INPUT_FORM}")
        names = [t.name for t in self.tensors]
        if len(set(names)) != len(names):
            raise InputSpecError(f"input names repeat: {', '.join(names)}", "give every --input its own name")

    @classmethod
    def single(cls, shape: Iterable[int], dtype: str = "float32", name: str = "x") -> "ModelInputs":
        """One input of this shape (the `--input-shape` form)."""
        return cls((TensorSpec(name=name, shape=tuple(int(d) for d in shape), dtype=dtype),))

    @property
    def first(self) -> TensorSpec:
        """The first input (the one an image model has)."""
        return self.tensors[0]

    @property
    def names(self) -> tuple[str, ...]:
        """The input names in order."""
        return tuple(t.name for t in self.tensors)

    @property
    def batch(self) -> int:
        """The batch size: dimension 0 of the first input."""
        shape = self.first.shape
        return shape[0] if shape else 1

    @property
    def dynamic_batch(self) -> bool:
        """Whether every input's dimension 0 is a batch axis that may vary (scalars have no batch,
        so they neither allow nor forbid one; a model of scalars only has none)."""
        shaped = [t for t in self.tensors if t.shape]
        return bool(shaped) and all(t.dynamic_batch for t in shaped)

    @property
    def sequence(self) -> int | None:
        """The sequence length, when an input has a sequence axis."""
        for t in self.tensors:
            axis = t.axis_of(SEQUENCE)
            if axis is not None:
                return t.shape[axis]
        return None

    def with_batch(self, batch: int) -> "ModelInputs":
        """The same inputs at another batch size (dimension 0 of every input)."""
        return ModelInputs(tuple(replace(t, shape=(batch, *t.shape[1:])) if t.shape else t
                                 for t in self.tensors))

    def with_sequence(self, length: int) -> "ModelInputs":
        """The same inputs at another sequence length."""
        return ModelInputs(tuple(t.with_axis(SEQUENCE, length) for t in self.tensors))

    def text(self) -> str:
        """Shapes in the CLI's words: `1x3x224x224` for one input, `name:1x128:int64 ...` for several."""
        if self.is_plain_image_like():
            return "x".join(map(str, self.first.shape))
        return " ".join(t.cli() for t in self.tensors)

    @property
    def image_like(self) -> bool:
        """Whether the first input is a 4-D float batch of images (the layout channels_last reorders)."""
        return len(self.first.shape) == 4 and self.first.is_float

    def is_plain_image_like(self) -> bool:
        """One float32 input with a shape and drawn values: the case `--input-shape` alone describes."""
        first = self.first
        return len(self.tensors) == 1 and first.dtype == "float32" and bool(first.shape) and first.value is None

    def cli_args(self) -> list[str]:
        """The CLI arguments that reproduce these inputs."""
        if self.is_plain_image_like():
            return ["--input-shape", self.text()]
        args: list[str] = []
        for t in self.tensors:
            args += ["--input", t.cli()]
        return args

    def describe(self) -> str:
        """Every input on one line each, for errors that must name what the model expects."""
        return "; ".join(t.describe() for t in self.tensors)

    def example(self) -> str:
        """The CLI flags for a fix text: `--input-shape` for one float input, else each input's
        `--input` with sizes in place of open dimensions (see `TensorSpec.example`)."""
        if self.is_plain_image_like():
            return "--input-shape " + "x".join(str(d or guess_dim(self.first, i))
                                               for i, d in enumerate(self.first.shape))
        return " ".join(f"--input {t.example()}" for t in self.tensors)


def _parse_dims(text: str, *, what: str, example: str, scalar: bool = False) -> tuple[int, ...]:
    cleaned = text.strip().lower()
    if scalar and not cleaned:
        return ()  # `sr::int64:16000`: an empty shape is a scalar
    if not re.fullmatch(r"\d+([x,]\d+)*", cleaned):
        raise InputSpecError(f"{what} {text!r} is not a list of positive integers",
                             f"write it batch first, separated by 'x', e.g. {example}")
    dims = tuple(int(d) for d in re.split(r"[x,]", cleaned))
    if any(d <= 0 for d in dims):
        raise InputSpecError(f"{what} {text!r} has a zero dimension",
                             f"every dimension must be at least 1, e.g. {example}")
    return dims


def parse_shape(text: str, *, dtype: str = "float32") -> ModelInputs:
    """Parse `--input-shape 1x3x224x224` (or `1,3,224,224`): one input of that shape."""
    dims = _parse_dims(text, what="input shape", example="--input-shape 1x3x224x224")
    check_dtype(dtype)
    return ModelInputs.single(dims, dtype)


def check_dtype(dtype: str) -> str:
    """The dtype if the planner can feed it; an error naming the ones it can otherwise."""
    if dtype not in DTYPES:
        raise InputSpecError(f"unknown input dtype {dtype!r}", f"use one of {', '.join(DTYPES)}")
    return dtype


_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_VALUES = re.compile(rf"\s*({_NUMBER})\s*(?:-\s*({_NUMBER})\s*)?")


def parse_input(text: str, *, example: str = "input_ids:1x128:int64:0-30522") -> TensorSpec:
    """Parse one `--input name:SHAPE:DTYPE[:LOW-HIGH|:VALUE]`; the error shows `example` (the model's own).

    An empty SHAPE is a scalar. VALUE (or LOW-HIGH with LOW equal to HIGH) fixes every element at
    that value, for any dtype; a range of several values is for integer inputs only, upper end
    excluded. Values outside the dtype's range are refused.
    """
    fix = f"write --input {INPUT_FORM}, e.g. --input {example}"
    parts = text.strip().split(":")
    if len(parts) not in (2, 3, 4) or not parts[0]:
        raise InputSpecError(f"--input {text!r} does not have the form {INPUT_FORM}", fix)
    name = parts[0]
    if not re.fullmatch(r"[A-Za-z_][\w.\-/]*", name):
        raise InputSpecError(f"--input {text!r}: {name!r} is not an input name", fix)
    shape = _parse_dims(parts[1], what=f"--input {name} shape", example=f"--input {example}", scalar=True)
    dtype = parts[2].strip().lower() if len(parts) > 2 and parts[2] else "float32"
    if dtype not in DTYPES:
        raise InputSpecError(f"--input {text!r}: unknown dtype {dtype!r}",
                             f"use one of {', '.join(DTYPES)}, e.g. --input {example}")
    if len(parts) < 4:
        return TensorSpec(name=name, shape=shape, dtype=dtype)
    match = _VALUES.fullmatch(parts[3])
    if match is None:
        raise InputSpecError(f"--input {text!r}: {parts[3]!r} is not LOW-HIGH or one value",
                             f"give one value (every element fixed at it) or two integers, the upper one "
                             f"excluded, e.g. --input {example}")
    first, *rest = [_number(g, dtype, text, example) for g in match.groups() if g is not None]
    if rest and rest[0] != first:
        low, high = first, rest[0]
        if dtype in FLOAT_DTYPES or isinstance(low, float) or isinstance(high, float):
            raise InputSpecError(f"--input {text!r}: a range of values applies to integer inputs only",
                                 f"give one value to fix it (e.g. --input {name}:{parts[1]}:{dtype}:{low}), or "
                                 f"an integer dtype, e.g. --input {example}")
        if high <= low:
            raise InputSpecError(f"--input {text!r}: the range {low}-{high} is empty",
                                 f"the upper end (excluded) must be above the lower one, e.g. --input {example}")
        check_value(name, dtype, low, high=high - 1)
        return TensorSpec(name=name, shape=shape, dtype=dtype, low=int(low), high=int(high),
                          range_basis="given with --input")
    check_value(name, dtype, first)
    return TensorSpec(name=name, shape=shape, dtype=dtype, value=first)


def _number(raw: str, dtype: str, text: str, example: str) -> int | float:
    """One value of `--input`: an int for an integer dtype (refusing fractions), a float for a float one."""
    if dtype in FLOAT_DTYPES:
        return float(raw)
    try:
        return int(raw)
    except ValueError:
        number = float(raw)
        if not number.is_integer():
            raise InputSpecError(f"--input {text!r}: {raw} is not a whole number, and the input is {dtype}",
                                 f"give an integer value, or a float dtype, e.g. --input {example}") from None
        return int(number)


_BFLOAT16_MAX = 3.3895313892515355e38  # numpy has no bfloat16: (2 - 2**-7) * 2**127


def check_value(name: str, dtype: str, low: int | float, *, high: int | float | None = None) -> None:
    """Refuse a value (or values `low`..`high`, both included) that `dtype` cannot hold, e.g. 300 as int8."""
    import numpy as np

    high = low if high is None else high
    if dtype not in FLOAT_DTYPES:
        lo, hi = (0, 1) if dtype == "bool" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        if low < lo or high > hi:
            shown = f"{low}" if low == high else f"{low}..{high}"
            raise InputSpecError(f"--input {name}: {shown} does not fit {dtype}, which holds {lo} to {hi}",
                                 f"give a value from {lo} to {hi}, or the dtype the model takes")
        return
    largest = _BFLOAT16_MAX if dtype == "bfloat16" else float(np.finfo(dtype).max)
    if max(abs(low), abs(high)) > largest:
        raise InputSpecError(f"--input {name}: {low} is beyond the largest {dtype} ({largest:g})",
                             f"give a value within ±{largest:g}, or the dtype the model takes")


def spec_from_declared(entries: Any, *, where: str) -> ModelInputs:
    """Inputs declared in a factory file's `INPUT_SPEC`: `--input` strings or dicts of the same fields."""
    if isinstance(entries, (str, dict)):
        entries = [entries]
    tensors = []
    for entry in entries:
        if isinstance(entry, str):
            tensors.append(parse_input(entry))
            continue
        if not isinstance(entry, dict) or "shape" not in entry:
            raise InputSpecError(f"{where}: INPUT_SPEC entry {entry!r} is neither a string nor a dict "
                                 "with a shape", f"write INPUT_SPEC = ['{INPUT_FORM}', ...]")
        value_range = entry.get("range")
        low, high = (int(value_range[0]), int(value_range[1])) if value_range else (None, None)
        dtype = check_dtype(str(entry.get("dtype", "float32")))
        shape = tuple(int(d) for d in entry["shape"])
        axes = tuple(entry.get("axes") or default_axes(shape, dtype))
        tensors.append(TensorSpec(name=str(entry.get("name", f"input{len(tensors)}")), shape=shape,
                                  dtype=dtype, axes=axes, low=low, high=high, value=entry.get("value"),
                                  range_basis="declared in INPUT_SPEC" if value_range else ""))
    return ModelInputs(tuple(tensors))
