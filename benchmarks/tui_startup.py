"""TUI start-up time: from launching the process until the hardware facts show, and until the demo model is ready.

Each launch is a fresh Python process (imports included, as a user starting `planner` pays them)
that opens the real TUI headless at 120x40 with Textual's `App.run_test` and prints, for each
milestone, the seconds since the parent started it: the first frame (the app is ready), the
hardware facts on screen ("Device class" in step 1), and the default demo model loaded. The
median of the launches is reported, with the machine's load average before and after: on a
shared machine the figures move with the load, so quote them with it.

Goals (issue 15), on an idle machine: hardware facts < 1 s, demo model ready < 2 s.

Usage: .venv/bin/python benchmarks/tui_startup.py [--launches 10] [--timeout 120]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MILESTONES = ("first_frame", "hardware_facts", "model_ready")


def child(started: float, timeout: float) -> dict[str, float]:
    """In the launched process: open the TUI headless and time each milestone from `started`."""
    sys.path.insert(0, str(REPO_ROOT))
    from planner.tui.app import PlannerApp

    seen: dict[str, float] = {}

    async def main() -> None:
        app = PlannerApp(out_dir=Path(tempfile.mkdtemp()) / "out")
        async with app.run_test(size=(120, 40)) as pilot:
            seen["first_frame"] = time.time() - started
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and len(seen) < len(MILESTONES):
                if "hardware_facts" not in seen and app.session.hw is not None and _facts_shown(app):
                    seen["hardware_facts"] = time.time() - started
                if "model_ready" not in seen and app.session.model is not None:
                    seen["model_ready"] = time.time() - started
                # Polling faster than this takes the GIL from the load it is timing.
                await pilot.pause(0.05)
            app.stop_running_job()

    asyncio.run(main())
    return seen


def _facts_shown(app: object) -> bool:
    """Whether step 1 shows the detected machine (its device class row)."""
    from rich.table import Table

    from planner.tui.widgets.kv import KeyValues

    table = app.query_one("#machine", KeyValues).content  # type: ignore[attr-defined]
    if not isinstance(table, Table) or not table.columns:
        return False
    return any(str(cell) == "Device class" for cell in table.columns[0]._cells)


def launch(timeout: float) -> dict[str, float]:
    """Start one TUI process and return its milestones (seconds since the launch)."""
    started = time.time()
    out = subprocess.run([sys.executable, __file__, "--child", str(started), "--timeout", str(timeout)],
                         capture_output=True, text=True, timeout=timeout + 60, cwd=REPO_ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("MILESTONES "):
            return json.loads(line.removeprefix("MILESTONES "))
    raise RuntimeError(f"the TUI process reported nothing (exit {out.returncode}): {out.stderr[-2000:]}")


def main() -> int:
    """Launch the TUI N times and print the median time to each milestone."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print("MILESTONES " + json.dumps(child(args.child, args.timeout)), flush=True)
        return 0
    load_before = os.getloadavg()
    runs = [launch(args.timeout) for _ in range(args.launches)]
    load_after = os.getloadavg()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; {args.launches} launches")
    for name in MILESTONES:
        values = [r[name] for r in runs if name in r]
        if values:
            print(f"{name:15s} median {statistics.median(values):.2f} s  "
                  f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} of {len(runs)} reached)")
        else:
            print(f"{name:15s} not reached in {args.timeout:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
