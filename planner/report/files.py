"""Writing the report to disk: figures and report.md, each through a temporary file and a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, IO

REPORT_NAME = "report.md"
FIGURES_DIR = "figures"
_FILE_MODE = 0o644


def write_atomic(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write through a temporary file in the same folder, then rename over `path`.

    A reader never sees half a file, and a failure leaves no temporary file behind.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        # mkstemp creates the file owner-only; a report is meant to be shared like any document.
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, content: str) -> None:
    """Write UTF-8 text atomically."""
    write_atomic(path, lambda fh: fh.write(content.encode("utf-8")))


def render_report_files(results: dict, out_dir: Path) -> Path:
    """Write out_dir/report.md and out_dir/figures/*.png from results; returns the report's path."""
    from planner.report.figures import draw_figures
    from planner.report.markdown import render_markdown

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures, notes = draw_figures(results, out_dir / FIGURES_DIR, relative_to=out_dir)
    report = out_dir / REPORT_NAME
    write_text_atomic(report, render_markdown(results, figures=figures, figure_notes=notes))
    return report
