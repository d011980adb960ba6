"""ModelSource: the one string the CLI and the TUI use to name a model, parsed into its kind."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from planner.errors import ModelLoadError


class SourceKind(StrEnum):
    """Where a model comes from."""

    DEMO = "demo"
    TORCHVISION = "torchvision"
    PYTHON = "python"
    ONNX = "onnx"
    EXPORTED = "exported"
    TORCHSCRIPT = "torchscript"


@dataclass(frozen=True)
class ModelSource:
    """A parsed model source: kind, the name or path, and (for Python files) the factory name."""

    text: str
    kind: SourceKind
    target: str
    factory: str = ""

    @property
    def path(self) -> Path:
        """The file this source names (only for file kinds)."""
        return Path(self.target)

    @property
    def short_name(self) -> str:
        """A short name for reports and folder names."""
        if self.kind in (SourceKind.DEMO, SourceKind.TORCHVISION):
            return self.target
        if self.kind is SourceKind.PYTHON:
            return f"{self.path.stem}-{self.factory}"
        return self.path.stem


_SUFFIX_KINDS = {".onnx": SourceKind.ONNX, ".pt2": SourceKind.EXPORTED,
                 ".pt": SourceKind.TORCHSCRIPT, ".pth": SourceKind.TORCHSCRIPT,
                 ".ts": SourceKind.TORCHSCRIPT}

SOURCE_HELP = (
    "demo:<name> (built-in), tv:<name> (torchvision, random weights), "
    "path/to/file.py:factory (with --trust-code), model.onnx, model.pt2 (torch.export), "
    "model.pt (TorchScript)"
)


def parse_source(text: str) -> ModelSource:
    """Parse a model source string; raise ModelLoadError naming the accepted forms."""
    text = text.strip()
    if not text:
        raise ModelLoadError("no model given", f"pass --model with one of: {SOURCE_HELP}")
    if text.startswith("demo:"):
        return ModelSource(text, SourceKind.DEMO, text[5:])
    if text.startswith("tv:"):
        return ModelSource(text, SourceKind.TORCHVISION, text[3:])
    head, sep, tail = text.rpartition(":")
    if sep and head.endswith(".py"):
        if not tail.isidentifier():
            raise ModelLoadError(f"{tail!r} is not a Python function name",
                                 "write path/to/file.py:factory_function")
        return ModelSource(text, SourceKind.PYTHON, head, tail)
    if text.endswith(".py"):
        raise ModelLoadError(f"{text} names a Python file but no factory function",
                             f"write {text}:make_model, where make_model() returns the nn.Module")
    kind = _SUFFIX_KINDS.get(Path(text).suffix.lower())
    if kind is None:
        raise ModelLoadError(f"cannot tell what kind of model {text!r} is",
                             f"use one of: {SOURCE_HELP}")
    return ModelSource(text, kind, text)
