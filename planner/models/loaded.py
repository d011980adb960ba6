"""LoadedModel: what was loaded, ready to run, with the facts `planner inspect` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.codec import to_data
from planner.models.footprint import Footprint
from planner.models.source import ModelSource, SourceKind
from planner.models.spec import ModelInputs, TensorSpec

Feed = dict[str, np.ndarray]
"""One set of input arrays, keyed by input name, in the model's input order."""

# numpy has no bfloat16: such inputs are drawn as float32 and cast by the runtime's session.
_NP_DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float32, "float64": np.float64,
              "int64": np.int64, "int32": np.int32, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


@dataclass
class LoadedModel:
    """A model ready to run: a torch module (CPU, fp32) and/or an ONNX file, and its inputs."""

    source: ModelSource
    inputs: ModelInputs
    output_shape: tuple[int, ...]
    parameters: int
    size_bytes: int
    module: Any = None  # torch.nn.Module; typed loosely so this module does not import torch
    onnx_path: Path | None = None
    trust_code: bool = False
    notes: list[str] = field(default_factory=list)
    program: Any = None  # the torch.export ExportedProgram a .pt2 held (exported to ONNX as is)
    footprint: Footprint | None = None  # memory estimated for inputs and activations before the first run

    @property
    def name(self) -> str:
        """A short name for reports and folder names."""
        return self.source.short_name

    @property
    def scripted(self) -> bool:
        """Whether the module is TorchScript (no forward hooks, no torch.compile, no torch.export)."""
        return self.source.kind is SourceKind.TORCHSCRIPT and self.module is not None

    @property
    def hooks_work(self) -> bool:
        """Whether forward hooks can observe the module's layers (TorchScript modules refuse them)."""
        return not self.scripted

    @property
    def has_torch(self) -> bool:
        """Whether a torch module is available (ONNX-only models have none)."""
        return self.module is not None

    def make_feeds(self, *, batch: int | None = None, count: int = 1, seed: int = 0) -> list[Feed]:
        """`count` distinct, reproducible feeds of this model's inputs (batch overridable)."""
        inputs = self.inputs if batch is None else self.inputs.with_batch(batch)
        return make_feeds(inputs, count=count, seed=seed)

    def torch_args(self, *, batch: int | None = None, seed: int = 0) -> tuple[Any, ...]:
        """One feed as torch tensors, in the positional order the module takes them (a Python number
        for an argument the forward types as int or float)."""
        from planner.models.inputs import scalar_arguments, torch_arguments

        feed = self.make_feeds(batch=batch, seed=seed)[0]
        return torch_arguments(feed.values(), scalar_arguments(self.module))

    def describe(self) -> dict:
        """The facts `planner inspect --json` prints."""
        return {
            "source": self.source.text,
            "kind": str(self.source.kind),
            "name": self.name,
            "parameters": self.parameters,
            "size_bytes": self.size_bytes,
            "inputs": [{**to_data(t), "values": t.value_rule()} for t in self.inputs.tensors],
            "dynamic_batch": self.inputs.dynamic_batch,
            "output_shape": list(self.output_shape),
            "runtime": "torch" if self.has_torch else "onnxruntime",
            "onnx_path": str(self.onnx_path) if self.onnx_path else None,
            "notes": list(self.notes),
        }


def make_feeds(inputs: ModelInputs, *, count: int = 1, seed: int = 0) -> list[Feed]:
    """Reproducible inputs: normal floats, token ids in their range, masks of ones (see value_rule)."""
    rng = np.random.default_rng(seed)
    return [{t.name: tensor_values(t, rng) for t in inputs.tensors} for _ in range(count)]


def np_dtype(dtype: str) -> np.dtype:
    """The numpy dtype an input of this dtype is fed as (bfloat16, which numpy lacks, as float32)."""
    return np.dtype(_NP_DTYPES.get(dtype, np.float32))


def tensor_values(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """One array for one input, drawn by the rule `spec.value_rule()` names."""
    dtype = _NP_DTYPES.get(spec.dtype, np.float32)
    fill = spec.fill()
    if fill == "fixed":
        return np.full(spec.shape, spec.value, dtype=dtype)
    if fill == "normal":
        # Drawn in the model's dtype where numpy can (float32, float64): drawing float64 and then
        # casting would briefly hold twice (float16: four times) the input's size.
        if dtype in (np.float32, np.float64):
            return rng.standard_normal(spec.shape, dtype=dtype)
        return rng.standard_normal(spec.shape, dtype=np.float32).astype(dtype)
    if fill == "ones":
        return np.ones(spec.shape, dtype=dtype)
    if fill == "zeros":
        return np.zeros(spec.shape, dtype=dtype)
    low, high, _ = spec.int_range()
    if dtype is not np.bool_ and np.iinfo(dtype).min <= low and high - 1 <= np.iinfo(dtype).max:
        return rng.integers(low, high, size=spec.shape, dtype=dtype)
    return rng.integers(low, high, size=spec.shape).astype(dtype)


def set_eval(module: Any) -> Any:
    """Put a torch module in eval mode where it has one (a torch.export module refuses eval())."""
    try:
        return module.eval()
    except NotImplementedError:
        return module  # an ExportedProgram's module: its graph was captured in eval mode already
