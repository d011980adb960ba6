"""Model sources, loaders, input specs, and the validation data fed to them (`valdata`, `samples`).

Names are resolved lazily so that a measuring worker that only needs `make_feeds` (an ONNX
Runtime or OpenVINO candidate) never imports torch: its peak memory must be the runtime's own.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ModelInputs": "planner.models.spec", "TensorSpec": "planner.models.spec",
    "parse_shape": "planner.models.spec", "parse_input": "planner.models.spec",
    "LoadedModel": "planner.models.loaded", "make_feeds": "planner.models.loaded",
    "Feed": "planner.models.loaded",
    "load_model": "planner.models.loaders",
    "ModelSource": "planner.models.source", "SourceKind": "planner.models.source",
    "parse_source": "planner.models.source",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'planner.models' has no attribute {name!r}")
