"""Does the whole-model verdict hold when the machine is busy? `planner profile --quick --json` of one model,
run N times on an idle machine and N times beside a process that keeps one core busy.

Printed per run: p50, the verdict (compute/memory/overhead-bound), whether it is marked unstable and why,
and what the measurement audit saw (other processes' load). A verdict that flips with load, or a
disturbed run that is not flagged, is what this is here to catch.

Usage: .venv/bin/python benchmarks/verdict_under_load.py [--model demo:inefficient] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PLANNER = [sys.executable, "-m", "planner.cli"]
BURNER = [sys.executable, "-c", "while True: pass"]


def profile(model: str) -> dict:
    """One quick profile's JSON."""
    proc = subprocess.run([*PLANNER, "profile", "--model", model, "--quick", "--json"], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).resolve().parent.parent)
    return json.loads(proc.stdout)


def row(label: str, data: dict) -> str:
    """One run as a table row."""
    bn = data.get("bottleneck") or {}
    audit = data.get("audit") or {}
    load = audit.get("other_load_mean_cores")
    unstable = "" if bn.get("stable", True) else f"unstable: {bn.get('unstable_reason', '')}"
    return (f"{label:<8} p50 {data['latency_ms']['p50_ms']:8.2f} ms  {str(bn.get('bound')) + '-bound':<16} "
            f"others {('%.2f cores' % load) if load is not None else 'not read':<11} {unstable[:110]}")


def main(argv: list[str] | None = None) -> int:
    """Profile idle, then under a one-core busy loop; print each run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo:inefficient")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for i in range(args.runs):
        print(row(f"idle {i + 1}", profile(args.model)), flush=True)
    burner = subprocess.Popen(BURNER)
    try:
        for i in range(args.runs):
            print(row(f"busy {i + 1}", profile(args.model)), flush=True)
    finally:
        burner.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
