"""A scripted engine for the TUI's tests, as a real process: `planner engine`'s own server replaying the recorded
demo:tiny session (tui_support.RecordedSession) over stdin/stdout.

    python tests/tui/fake_engine.py

`PLANNER_FAKE_STEP_S` (seconds, default 0) is how long the profile and each recorded candidate take, so a test
can act mid-step (kill the engine, cancel) without a real measurement.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tui_support import RecordedSession  # noqa: E402

from planner.engine.server import serve_stdio  # noqa: E402


class PacedSession(RecordedSession):
    """The recorded session, each held step taking `PLANNER_FAKE_STEP_S` seconds."""

    def _wait_gate(self) -> None:
        time.sleep(float(os.environ.get("PLANNER_FAKE_STEP_S", "0")))


if __name__ == "__main__":
    sys.exit(serve_stdio(session_factory=PacedSession))
