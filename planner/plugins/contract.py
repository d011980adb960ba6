"""The plugin contract: plugins build candidates as plain data; the measure worker opens them.

Heavy imports (onnxruntime, openvino, tensorrt) happen inside `candidates`/`open`, never at
module import, so listing plugins stays fast and a missing package is a reason, not a crash.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import LoadedModel


class Target(StrEnum):
    """Where a plugin's candidates run."""

    CPU = "cpu"
    NVIDIA = "nvidia"
    EDGE = "edge"
    ANY = "any"


class Precision(StrEnum):
    """The numeric precision a candidate computes in."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"
    TERNARY = "ternary"


@dataclass(frozen=True)
class ModelRef:
    """How a worker process rebuilds the model: the source string, the input shape, trust."""

    source: str
    input_shape: tuple[int, ...]
    trust_code: bool = False

    def load(self) -> "LoadedModel":
        """Load the model (seeded weights, so every process gets the same function)."""
        from planner.models import load_model
        from planner.models.spec import InputSpec

        return load_model(self.source, input_shape=InputSpec(shape=tuple(self.input_shape)),
                          trust_code=self.trust_code)

    @classmethod
    def of(cls, model: "LoadedModel") -> "ModelRef":
        """The reference that rebuilds an already loaded model."""
        return cls(model.source.text, tuple(model.input_spec.shape), model.trust_code)


@dataclass(frozen=True)
class CandidateSpec:
    """One deployment candidate as plain data: which plugin opens it, with what settings/files.

    `config` must be JSON-serialisable; `artifacts` maps a role ("onnx") to a file path.
    """

    plugin: str
    label: str
    config: dict = field(default_factory=dict)
    precision: Precision = Precision.FP32
    artifacts: dict = field(default_factory=dict)
    threads: int | None = None
    dynamic_batch: bool = True
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        data = asdict(self)
        data["precision"] = str(self.precision)
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CandidateSpec":
        """Inverse of `to_dict`."""
        return cls(plugin=data["plugin"], label=data.get("label", data["plugin"]),
                   config=dict(data.get("config", {})),
                   precision=Precision(data.get("precision", "fp32")),
                   artifacts=dict(data.get("artifacts", {})), threads=data.get("threads"),
                   dynamic_batch=data.get("dynamic_batch", True),
                   notes=tuple(data.get("notes", ())))

    def to_text(self) -> str:
        """The compact form `planner bench --candidate` accepts (JSON)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> "CandidateSpec":
        """Parse `to_text` output, or a path to a JSON file holding it."""
        text = text.strip()
        if not text.startswith("{") and Path(text).is_file():
            text = Path(text).read_text()
        return cls.from_dict(json.loads(text))


@runtime_checkable
class Session(Protocol):
    """An opened candidate in the worker: prepare inputs once, then run them many times."""

    def prepare(self, array: "np.ndarray") -> Any:
        """Convert one input array to what `run` takes (not timed)."""

    def run(self, prepared: Any) -> Any:
        """Run one inference (timed)."""

    def to_numpy(self, output: Any) -> "np.ndarray":
        """The first output as a float32 numpy array (for fidelity)."""

    def info(self) -> dict:
        """Settings actually in force (threads, effective precision, provider...)."""


@dataclass
class PlanContext:
    """What a plugin sees when it builds candidates."""

    hw: "HardwareProfile"
    model: "LoadedModel"
    workdir: Path
    quick: bool = False
    cancel: Callable[[], bool] = lambda: False
    log: Callable[[str], None] = lambda msg: None
    shared: dict = field(default_factory=dict)  # artifacts plugins may reuse (e.g. one ONNX export)


class Plugin:
    """Base class for optimization plugins: subclass and set the class attributes."""

    name: str = ""
    target: Target = Target.ANY
    summary: str = ""
    requires: tuple[str, ...] = ()  # importable module names this plugin needs

    def missing_packages(self) -> list[str]:
        """The required packages that are not importable, checked without importing them."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def check(self, hw: "HardwareProfile", model: "LoadedModel") -> list[str]:
        """Every reason this plugin cannot run here; [] means it can."""
        return [f"{m} not installed (pip install {m})" for m in self.missing_packages()]

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Build artifacts under ctx.workdir and yield the specs to measure."""
        raise NotImplementedError(f"plugin {self.name} does not define candidates()")

    def open(self, spec: CandidateSpec, model: ModelRef) -> Session:
        """In the worker: rebuild the runtime session from the spec."""
        raise NotImplementedError(f"plugin {self.name} does not define open()")
