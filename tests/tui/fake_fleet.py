"""A scripted fleet process for the fleet view's tests, as a real process: it speaks `planner fleet --status-lines`
(one JSON object per line on stdout) from a script instead of planning over SSH.

    python tests/tui/fake_fleet.py SCRIPT.json

The script is a JSON list of steps, each a list:

    ["status", label, host, phase, detail]   one status line
    ["sleep", seconds]                       a pause (a host busy planning)
    ["stdout", text]                         a line on stdout that is not a status (the view must skip it)
    ["stderr", text]                         a line on stderr (the view sends it to its log)
    ["wait_cancel", seconds]                 wait for SIGINT, at most that long
    ["done", out_dir]                        write the comparison and print the done line, then exit 0
    ["exit", status]                         die with no done line

The comparison is the real one (planner.report.fleet) over the recorded demo:tiny results
(tests/tui/fixtures/results.json): a host whose last phase is `done` or `cancelled` has them, the others
failed with their last detail. SIGINT does what the real fleet does: every host not finished fetches (for
PLANNER_FAKE_FLEET_FETCH_S seconds), then says `cancelled`; the comparison is written with what they have, the
done line says `interrupted`, and the process exits 130. With PLANNER_FAKE_FLEET_DEAF=1 it ignores SIGINT (a
fleet stuck fetching), so only SIGTERM or SIGKILL end it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

cancelled = threading.Event()
hosts: dict[str, dict[str, str]] = {}  # label -> host, phase, detail (in the order first seen)


def say(message: dict) -> None:
    """One JSON line on stdout, flushed, as `planner fleet --status-lines` prints it."""
    print(json.dumps(message, separators=(",", ":")), flush=True)


def status(label: str, host: str, phase: str, detail: str = "") -> None:
    """A host's status line, remembered for the comparison."""
    hosts[label] = {"host": host, "phase": phase, "detail": detail}
    say({"type": "status", "label": label, "host": host, "phase": phase, "detail": detail})


def finish(out: Path, *, interrupted: bool) -> int:
    """Write the real comparison over the recorded results and print the done line."""
    from planner.report.fleet import FleetRow, write_fleet_report
    from planner.results import read_results

    recorded = read_results(FIXTURES / "results.json")
    rows = []
    for label, line in hosts.items():
        if line["phase"] in ("done", "cancelled"):  # a cancelled host keeps what it measured, as in the real fleet
            folder = out / label
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / "report.md", folder / "report.md")
            failure = line["detail"] if line["phase"] == "cancelled" else ""
            rows.append(FleetRow(label, line["host"], recorded, folder / "report.md", failure))
        else:
            rows.append(FleetRow(label, line["host"], None, None, line["detail"] or line["phase"]))
    report = write_fleet_report(rows, out)
    say({"type": "done", "report": str(report), "interrupted": interrupted,
         "rows": [{"label": r.label, "host": r.host, "failure": r.failure,
                   "status": r.results.status.value if r.results is not None else None,
                   "report": str(r.report) if r.report else None} for r in rows]})
    return 130 if interrupted else 0


def cancel_all(out: Path) -> int:
    """SIGINT came: each host still going fetches what it measured (PLANNER_FAKE_FLEET_FETCH_S seconds, default
    0.5) and is cancelled, then the comparison of what they have."""
    going = [(label, line) for label, line in hosts.items() if line["phase"] not in ("done", "failed", "cancelled")]
    for label, line in going:
        status(label, line["host"], "fetching", "what it measured before the cancel")
    time.sleep(float(os.environ.get("PLANNER_FAKE_FLEET_FETCH_S", "0.5")))
    for label, line in list(hosts.items()):
        if line["phase"] not in ("done", "failed", "cancelled"):
            status(label, line["host"], "cancelled", "cancelled: the comparison holds what it measured")
    return finish(out, interrupted=True)


def run(script: list[list], out: Path) -> int:
    """Play the script; a SIGINT between steps cancels as the real fleet does."""
    for step in script:
        if cancelled.is_set():
            return cancel_all(out)
        kind, args = step[0], step[1:]
        if kind == "status":
            status(*args)
        elif kind == "sleep":
            cancelled.wait(float(args[0]))
        elif kind == "stdout":
            print(args[0], flush=True)
        elif kind == "stderr":
            print(args[0], file=sys.stderr, flush=True)
        elif kind == "wait_cancel":
            cancelled.wait(float(args[0]))
        elif kind == "done":
            return finish(Path(args[0]), interrupted=False)
        elif kind == "exit":
            return int(args[0])
        else:
            raise SystemExit(f"fake_fleet: unknown step {step!r}")
    return cancel_all(out) if cancelled.is_set() else 0


def main(argv: list[str]) -> int:
    """Read the script and play it."""
    script = json.loads(Path(argv[1]).read_text())
    out = next((Path(step[1]) for step in script if step[0] == "done"), Path("fleet-out"))
    if os.environ.get("PLANNER_FAKE_FLEET_DEAF") == "1":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, lambda *_: cancelled.set())
    print(f"fake fleet: {len(script)} steps", file=sys.stderr, flush=True)
    return run(script, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
