"""The one atomic writer: every file the planner writes (report, figures, results.json, the
ceilings cache, TensorRT engines) goes through a temporary file in the same folder and a rename,
so a reader never sees half a file and a failure leaves nothing behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

FILE_MODE = 0o644


def write_atomic(path: Path, write: Callable[[IO[bytes]], object], *, mode: int = FILE_MODE) -> None:
    """Write through a temporary file in the same folder, then rename over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        # mkstemp creates the file owner-only; what the planner writes is meant to be shared.
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, content: str) -> None:
    """Write UTF-8 text atomically."""
    data = content.encode("utf-8")
    write_atomic(path, lambda fh: fh.write(data))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write indented JSON atomically (values JSON cannot hold are written as strings)."""
    write_text_atomic(path, json.dumps(data, indent=2, default=str))
