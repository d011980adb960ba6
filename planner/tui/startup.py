"""Start-up of the interactive planner: the garbage collector waits until the first model has loaded.

Starting the planner creates a few hundred thousand objects that live as long as the process:
Textual and the step screens, then PyTorch, imported by the start-up's model load. CPython's
cyclic garbage collector scans the growing heap again and again while they are created (its full
collections took about 0.3 s of each start-up on the 2-core build machine), and it holds the GIL
while it scans, which both the UI thread and the model load need. Collection therefore pauses
from the launch until the start-up's model load has ended, loaded or failed, and then runs as
usual. Memory is still freed by reference counting meanwhile; only cycles wait.

This module imports nothing heavy, so the `planner` command can pause collection before it
imports the TUI.
"""

from __future__ import annotations

import gc

_paused = False


def pause_gc() -> None:
    """Pause automatic garbage collection for the start-up (nothing changes if it is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_gc() -> None:
    """Turn garbage collection back on if `pause_gc` turned it off; calling it again does nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()


def gc_paused() -> bool:
    """Whether collection is paused by `pause_gc` and not yet resumed."""
    return _paused
