"""LoadedModel: what was loaded, ready to run, with the facts `planner inspect` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.codec import to_data
from planner.models.source import ModelSource, SourceKind
from planner.models.spec import InputSpec

_NP_DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64,
              "int32": np.int32, "uint8": np.uint8}


@dataclass
class LoadedModel:
    """A model ready to run: a torch module (eval, CPU, fp32) and/or an ONNX file, and its input."""

    source: ModelSource
    input_spec: InputSpec
    output_shape: tuple[int, ...]
    parameters: int
    size_bytes: int
    module: Any = None  # torch.nn.Module; typed loosely so this module does not import torch
    onnx_path: Path | None = None
    trust_code: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """A short name for reports and folder names."""
        return self.source.short_name

    @property
    def has_torch(self) -> bool:
        """Whether a torch module is available (ONNX-only models have none)."""
        return self.module is not None

    def make_inputs(self, *, batch: int | None = None, count: int = 1, seed: int = 0) -> list[np.ndarray]:
        """`count` distinct, reproducible inputs of this model's shape (batch overridable)."""
        spec = self.input_spec if batch is None else self.input_spec.with_batch(batch)
        return make_inputs(spec, count=count, seed=seed)

    def describe(self) -> dict:
        """The facts `planner inspect --json` prints."""
        return {
            "source": self.source.text,
            "kind": str(self.source.kind),
            "name": self.name,
            "parameters": self.parameters,
            "size_bytes": self.size_bytes,
            "input": to_data(self.input_spec),
            "output_shape": list(self.output_shape),
            "runtime": "torch" if self.has_torch else "onnxruntime",
            "onnx_path": str(self.onnx_path) if self.onnx_path else None,
            "notes": list(self.notes),
        }


def make_inputs(spec: InputSpec, *, count: int = 1, seed: int = 0) -> list[np.ndarray]:
    """Reproducible random inputs for a spec: normal floats, or small non-negative integers."""
    rng = np.random.default_rng(seed)
    dtype = _NP_DTYPES.get(spec.dtype, np.float32)
    out = []
    for _ in range(count):
        if np.issubdtype(dtype, np.integer):
            out.append(rng.integers(0, 100, size=spec.shape).astype(dtype))
        else:
            out.append(rng.standard_normal(spec.shape).astype(dtype))
    return out


def is_file_kind(source: ModelSource) -> bool:
    """Whether the source names a file on disk."""
    return source.kind not in (SourceKind.DEMO, SourceKind.TORCHVISION)
