"""Process plumbing of the TUI: where the engine's output goes while the TUI owns the terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


def default_log_path() -> Path:
    """Where output of the measuring processes goes while the TUI owns the terminal."""
    return Path(tempfile.gettempdir()) / f"planner-tui-{os.getpid()}.log"


@contextlib.contextmanager
def stray_output_to(log_path: Path) -> Iterator[bool]:
    """Send whatever child processes and C libraries write to fds 1 and 2 into `log_path`.

    Textual draws on the terminal through sys.__stderr__ (and sizes it through sys.__stdout__);
    those are re-pointed at duplicates of the terminal, so the app is unaffected, while a
    measuring process's warnings land in the log instead of over the screen. Yields whether the
    redirect happened: only when both are terminals and no other Textual driver (e.g. the web
    one of `planner serve`) is in use.
    """
    if os.environ.get("TEXTUAL_DRIVER") or not (sys.__stdout__ and sys.__stderr__
                                                 and sys.__stdout__.isatty() and sys.__stderr__.isatty()):
        yield False
        return
    saved = (sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr)
    sys.__stdout__.flush()
    sys.__stderr__.flush()
    term_out, term_err = os.dup(1), os.dup(2)
    old_out, old_err = os.dup(1), os.dup(2)
    try:
        with open(log_path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        # typeshed marks sys.__stdout__/__stderr__ Final; re-pointing them is the point (see above).
        sys.__stdout__ = sys.stdout = os.fdopen(term_out, "w", encoding="utf-8",  # type: ignore[misc]
                                                errors="replace", closefd=True)
        sys.__stderr__ = sys.stderr = os.fdopen(term_err, "w", encoding="utf-8",  # type: ignore[misc]
                                                errors="replace", closefd=True)
        yield True
    finally:
        for stream in (sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os.dup2(old_out, 1)
        os.dup2(old_err, 2)
        os.close(old_out)
        os.close(old_err)
        replaced = (sys.__stdout__, sys.__stderr__)
        sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr = saved  # type: ignore[misc]
        for stream in replaced:
            if stream not in saved:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
