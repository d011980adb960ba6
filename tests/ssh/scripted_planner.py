"""A remote `planner` whose engine replays the recorded demo:tiny session (tests/tui/fake_engine.py's PacedSession)
instead of measuring: the SSH tests are about what crosses the connection, not about measurements.

    scripted_planner.py engine --detach        a detached run whose daemon is this script's `daemon DIR`
    scripted_planner.py daemon DIR             the scripted detached engine itself
    scripted_planner.py ARGS...                anything else: the real planner (preflight, engine --attach, ...)

`PLANNER_FAKE_STEP_S` paces the profile and each candidate (seconds), so a test can cut the connection mid-plan.
`PLANNER_SCRIPTED_DETECT=real` detects this machine for real (its cores after `PLANNER_CPUS`) instead of replaying
the recorded machine, so hosts that differ show it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))

def scripted_session():
    """The recorded session, taking the keywords `planner plan` passes (which the TUI's steps never do)."""
    from fake_engine import PacedSession  # type: ignore[import-not-found]

    from planner.pipeline import PlanSession

    class ScriptedPlan(PacedSession):  # type: ignore[misc]
        def detect(self):
            if os.environ.get("PLANNER_SCRIPTED_DETECT") == "real":
                return PlanSession.detect(self)
            return super().detect()

        def profile(self, *, quick=False, timeout_s=600.0, val_data=None, samples=None):
            return super().profile(quick=quick, timeout_s=timeout_s)

        def optimize(self, *, plugins=None, timeout_s=300.0, val_data=None, plugin_options=None, confirm=None):
            return super().optimize(plugins=plugins, timeout_s=timeout_s)

        def deploy(self):
            return ()  # no hand-over packages: nothing real was measured to hand over

        def load(self, source, **kwargs):
            # A model file shipped into the host's cache stands in for the recorded model: these tests are about
            # how the file got there, not about what it holds.
            return super().load(self.fixture["model"]["source"] if os.path.isfile(source) else source, **kwargs)

    return ScriptedPlan()


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:2] == ["engine", "--detach"]:
        from planner.engine.detached import detach_and_relay

        sys.exit(detach_and_relay([sys.executable, str(Path(__file__).resolve()), "daemon"]))
    if args[:1] == ["daemon"]:
        from planner.engine.detached import serve_daemon

        sys.exit(serve_daemon(Path(args[1]), session_factory=scripted_session))
    from planner.cli.main import main

    sys.exit(main(args))
