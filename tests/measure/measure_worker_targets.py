"""Module-level functions that the run_isolated tests call in spawned workers.

Kept free of heavy imports at the top so the tests can check what a fresh worker has loaded.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def add(a: int, b: int, *, scale: int = 1) -> int:
    """Return (a + b) * scale."""
    return (a + b) * scale


def big_array(n_bytes: int) -> Any:
    """Return a float64 numpy array of about ``n_bytes`` with known contents."""
    import numpy as np

    return np.arange(n_bytes // 8, dtype=np.float64)


def raise_type_error(message: str) -> None:
    """Raise a TypeError with the given message."""
    raise TypeError(message)


def abort() -> None:
    """Die with SIGABRT, as native code does on a failed check."""
    os.abort()


def sleep(seconds: float) -> None:
    """Sleep, to be stopped by the timeout."""
    time.sleep(seconds)


def read_env(name: str) -> str | None:
    """Return an environment variable as the worker sees it."""
    return os.environ.get(name)


def loaded_modules(names: list[str]) -> dict[str, bool]:
    """Report which of the named modules were already imported when the target ran."""
    return {name: name in sys.modules for name in names}


def unpicklable_result() -> Any:
    """Return a value that cannot be pickled."""
    return lambda: None


def exit_code(code: int) -> None:
    """Exit the interpreter at once, without returning."""
    os._exit(code)
