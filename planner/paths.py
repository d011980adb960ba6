"""Where the planner keeps its own files between runs: the cache folder (measured ceilings, the trained digits
model, the runtimes' versions, detached engine runs). One place, so every reader agrees, here and on a host."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PLANNER_CACHE_DIR"
"""The environment variable that moves the cache folder (tests keep theirs inside the test session)."""


def cache_dir() -> Path:
    """$PLANNER_CACHE_DIR, else the user's cache folder for the planner (platformdirs: ~/.cache/planner on Linux,
    $XDG_CACHE_HOME/planner where that is set)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    from platformdirs import user_cache_path

    return user_cache_path("planner", appauthor=False)
