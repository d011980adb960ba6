"""The one atomic writer: every file the planner writes (report, figures, results.json, the
ceilings cache, TensorRT engines) goes through a temporary file in the same folder and a rename,
so a reader never sees half a file and a failure leaves nothing behind."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Callable

# What open(path, "w") asks for; the process umask then takes bits away, as for any other file.
FILE_MODE = 0o666
_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the kernel shows it (Linux /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere the only way to read it is to set it; the lock keeps two writers from racing.
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(path: Path, write: Callable[[IO[bytes]], object], *, mode: int = FILE_MODE) -> None:
    """Write through a temporary file in the same folder, then rename over `path`.

    The file ends with `mode` less the umask, the permissions a plain open() would give it, so
    results.json, report.md and the figures all read alike (mkstemp alone gives owner-only 0600).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.chmod(tmp, mode & ~current_umask())
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
