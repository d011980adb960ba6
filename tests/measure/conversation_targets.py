"""Conversation factories that the interleaved-timing tests start in spawned workers."""

from __future__ import annotations

import os
from typing import Any, Callable


def counter(start: int) -> Callable[[Any], Any]:
    """A handler that keeps a running total between requests; 'raise' raises, 'pid' gives the worker's id."""
    total = [start]

    def handle(request: Any) -> Any:
        if request == "raise":
            raise ValueError("asked to fail")
        if request == "pid":
            return os.getpid()
        total[0] += int(request)
        return total[0]

    return handle


def refuse(message: str) -> Callable[[Any], Any]:
    """A factory that fails before it can answer anything."""
    raise RuntimeError(message)
