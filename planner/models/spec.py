"""InputSpec: the shape and dtype a model is fed, parsed from `--input-shape` or inferred."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from planner.errors import InputSpecError

_DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "uint8")


@dataclass(frozen=True, kw_only=True)
class InputSpec:
    """One input tensor: its shape (batch first), dtype, and whether the batch axis may vary."""

    name: str = "x"  # first, as the JSON form (`planner inspect --json`) has always listed it
    shape: tuple[int, ...]
    dtype: str = "float32"
    dynamic_batch: bool = True

    @property
    def batch(self) -> int:
        """The batch size in this spec's shape."""
        return self.shape[0]

    def with_batch(self, batch: int) -> "InputSpec":
        """The same spec with a different batch size."""
        return replace(self, shape=(batch, *self.shape[1:]))

    def text(self) -> str:
        """The shape as the CLI writes it, e.g. `1x3x224x224`."""
        return "x".join(str(d) for d in self.shape)


def parse_shape(text: str, *, dtype: str = "float32") -> InputSpec:
    """Parse `1x3x224x224` (or `1,3,224,224`) into an InputSpec."""
    cleaned = text.strip().lower()
    if not re.fullmatch(r"\d+([x,]\d+)*", cleaned):
        raise InputSpecError(
            f"input shape {text!r} is not a list of positive integers",
            "write it batch first, separated by 'x', e.g. --input-shape 1x3x224x224",
        )
    dims = tuple(int(d) for d in re.split(r"[x,]", cleaned))
    if any(d <= 0 for d in dims):
        raise InputSpecError(f"input shape {text!r} has a zero dimension",
                             "every dimension must be at least 1, e.g. 1x3x224x224")
    if dtype not in _DTYPES:
        raise InputSpecError(f"unknown input dtype {dtype!r}", f"use one of {', '.join(_DTYPES)}")
    return InputSpec(shape=dims, dtype=dtype)
