"""Where a plan writes: reports/<date>-<model>-<target>, created and proven writable up front."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from planner.errors import OutputDirError


def default_out_dir(model_name: str, target: str, *, root: Path = Path("reports")) -> Path:
    """reports/<date>-<model>-<target>, with a counter if it already exists."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_name)
    base = root / f"{dt.date.today().isoformat()}-{safe}-{target}"
    path, n = base, 2
    while path.exists() and any(path.iterdir()):
        path = Path(f"{base}-{n}")
        n += 1
    return path


def prepare_out_dir(path: Path) -> Path:
    """Create the output folder and prove it is writable, before any measuring starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-", delete=True):
            pass
    except OSError as exc:
        raise OutputDirError(f"cannot write to output folder {path}: {exc.strerror or exc}",
                             "pass --out with a folder you can write to") from exc
    return path
