"""TUI start-up time: from launching the process until the hardware facts show, and until the demo model is ready.

Each launch is a fresh Python process (imports included, as a user starting `planner` pays them)
that opens the real TUI headless at 120x40 with Textual's `App.run_test` and prints, for each
milestone, the seconds since the parent started it: the first frame (the app is ready), the
hardware facts on screen ("Device class" in step 1), and the default demo model loaded. Two
more points say where the time between them goes: when the load job started, and when PyTorch
finished importing (after that, loading is building the model and its one validating forward
pass). The median of the launches is reported, with the machine's load average before and after:
on a shared machine the figures move with the load, so quote them with it.

The process polls the app's state every 50 ms with a plain sleep: Textual's `pilot.pause` waits
for every widget to process its messages, main-thread work that the GIL takes from the load it
is timing.

Goals (issue 15), on an idle machine: hardware facts < 1 s, demo model ready < 2 s.

Like `planner`, each launch pauses garbage collection until the first model has loaded
(planner.tui.startup). `--compare-gc` alternates launches with and without that pause and
reports both, so the two are measured under the same load.

Usage: .venv/bin/python benchmarks/tui_startup.py [--launches 10] [--timeout 120] [--compare-gc]
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
# Where the time between the hardware facts and the model goes (not goals of their own).
BREAKDOWN = ("load_started", "torch_imported")


def child(started: float, timeout: float, *, gc_pause: bool = True) -> dict[str, float]:
    """In the launched process: open the TUI headless and time each milestone from `started`."""
    sys.path.insert(0, str(REPO_ROOT))
    if gc_pause:
        # As `planner` does before it imports the TUI (planner.cli.main).
        from planner.tui.startup import pause_gc

        pause_gc()
    from planner.tui.app import PlannerApp

    seen: dict[str, float] = {}

    async def main() -> None:
        app = PlannerApp(out_dir=Path(tempfile.mkdtemp()) / "out")
        async with app.run_test(size=(120, 40)):
            seen["first_frame"] = time.time() - started
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(m not in seen for m in MILESTONES):
                now = time.time() - started
                if "hardware_facts" not in seen and app.session.hw is not None and _facts_shown(app):
                    seen["hardware_facts"] = now
                if "load_started" not in seen and app.job is not None and app.job.name == "load":
                    seen["load_started"] = now
                if "torch_imported" not in seen and _torch_imported():
                    seen["torch_imported"] = now
                if "model_ready" not in seen and app.session.model is not None:
                    seen["model_ready"] = now
                # A plain sleep, not pilot.pause: see the module's docstring. Polling faster than
                # this also takes the GIL from the load it is timing.
                await asyncio.sleep(0.05)
            app.stop_running_job()

    asyncio.run(main())
    return seen


def _torch_imported() -> bool:
    """Whether PyTorch is imported completely (it is in sys.modules from the start of its import)."""
    torch = sys.modules.get("torch")
    return torch is not None and not getattr(getattr(torch, "__spec__", None), "_initializing", False)


def _facts_shown(app: object) -> bool:
    """Whether step 1 shows the detected machine (its device class row)."""
    from rich.table import Table

    from planner.tui.widgets.kv import KeyValues

    table = app.query_one("#machine", KeyValues).content  # type: ignore[attr-defined]
    if not isinstance(table, Table) or not table.columns:
        return False
    return any(str(cell) == "Device class" for cell in table.columns[0]._cells)


def _cpu_name() -> str:
    """The CPU's model name where Linux gives it, else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def launch(timeout: float, *, gc_pause: bool = True) -> dict[str, float]:
    """Start one TUI process and return its milestones (seconds since the launch)."""
    started = time.time()
    extra = [] if gc_pause else ["--gc-as-usual"]
    out = subprocess.run([sys.executable, __file__, "--child", str(started), "--timeout", str(timeout), *extra],
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
    parser.add_argument("--compare-gc", action="store_true",
                        help="alternate launches with and without the start-up's garbage-collection pause")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--gc-as-usual", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        seen = child(args.child, args.timeout, gc_pause=not args.gc_as_usual)
        print("MILESTONES " + json.dumps(seen), flush=True)
        return 0
    load_before = os.getloadavg()
    kinds = (True, False) if args.compare_gc else (True,)
    runs: dict[bool, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for _ in range(args.launches):
        for kind in kinds:
            runs[kind].append(launch(args.timeout, gc_pause=kind))
    load_after = os.getloadavg()
    print(f"{_cpu_name()}, {os.cpu_count()} CPUs; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; {args.launches} launches each")
    for kind in kinds:
        if args.compare_gc:
            print("with the garbage-collection pause (as planner starts):" if kind
                  else "without it (collection as usual):")
        _print_medians(runs[kind], args.timeout)
    return 0


def _print_medians(runs: list[dict[str, float]], timeout: float) -> None:
    """Each milestone's median over the launches, with its range."""
    for name in MILESTONES + BREAKDOWN:
        values = [r[name] for r in runs if name in r]
        if values:
            print(f"{name:15s} median {statistics.median(values):.2f} s  "
                  f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} of {len(runs)} reached)")
        else:
            print(f"{name:15s} not reached in {timeout:g} s")


if __name__ == "__main__":
    sys.exit(main())
