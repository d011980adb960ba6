"""ModelSource: the one string the CLI and the TUI use to name a model, parsed into its kind.

A file's kind comes from its content where the content says it (a TorchScript or torch.export zip,
a pickle, an ONNX protobuf), so `vad.jit` or a `.bin` loads as what it is; the suffix decides
only where the content is not recognised.
"""

from __future__ import annotations

import zipfile
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
    "path/to/file.py:factory (with --trust-code), an ONNX file (model.onnx), a torch.export archive "
    "(model.pt2) or a TorchScript file (model.pt, model.jit: any name, told by its content)"
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
    path = Path(text)
    suffix_kind = _SUFFIX_KINDS.get(path.suffix.lower())
    kind = sniff_kind(path, onnx_likely=suffix_kind is not SourceKind.ONNX) or suffix_kind
    if kind is None:
        what = ("its content is none of these" if path.is_file() else "it is a folder with no config.json: a decoder "
                "LLM is a Hugging Face folder with config.json, *.safetensors and tokenizer files"
                if path.is_dir() else "there is no such file")
        raise ModelLoadError(f"cannot tell what kind of model {text!r} is ({what})",
                             f"use one of: {SOURCE_HELP}")
    return ModelSource(text, kind, text)


def sniff_kind(path: Path, *, onnx_likely: bool = True) -> SourceKind | None:
    """A model file's kind from its first bytes and, for a zip, its entry names; None if not recognised.

    torch.export.save writes a zip with `archive_format` (and `models/`, `data/weights/`) entries;
    torch.jit.save a zip with a `code/` folder and `constants.pkl`. Any other zip with a `data.pkl`,
    and a bare pickle, is torch.save's format: reported as TorchScript so that the loader's pickle
    refusal explains it. An ONNX file is a protobuf with no magic number: it is parsed (only when
    `onnx_likely`; a `.onnx` name is trusted, its loader checks it properly).
    """
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    if head.startswith(b"PK") and zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (OSError, zipfile.BadZipFile):
            return None
        tails = {name.split("/", 1)[1] if "/" in name else name for name in names}
        if "archive_format" in tails or any(t.startswith(("models/", "serialized_exported_program")) for t in tails):
            return SourceKind.EXPORTED
        if "constants.pkl" in tails or any(t.startswith("code/") for t in tails) or "data.pkl" in tails:
            return SourceKind.TORCHSCRIPT
        return None
    if head[:1] == b"\x80":  # pickle protocol 2+: torch.save's legacy format, refused by the loader
        return SourceKind.TORCHSCRIPT
    if onnx_likely and _parses_as_onnx(path):
        return SourceKind.ONNX
    return None


def _parses_as_onnx(path: Path) -> bool:
    """Whether the file parses as an ONNX ModelProto with a graph (protobuf accepts much garbage,
    so a graph with nodes and an IR version is required)."""
    try:
        import onnx

        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - protobuf raises DecodeError and others on non-ONNX bytes
        return False
    return proto.ir_version > 0 and len(proto.graph.node) > 0
