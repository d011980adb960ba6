"""A fleet: the same plan on many hosts at once, one live status per host, then one comparison report.

Each host runs on its own thread (one plan per host at a time); the SSH work of all of them shares the
process's one asyncio loop. A host that fails (unreachable, no planner, a dropped connection) becomes a row
with its reason; the others go on. `parallel` caps how many hosts plan at once: hosts that share one physical
machine (tests, or VMs on one server) must measure one at a time, or each slows the other.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from planner.engine.waiting import wait_interruptible
from planner.errors import PlannerError
from planner.events import Event
from planner.pipeline.options import PlanOptions
from planner.report.fleet import FLEET_DIR, FleetRow, write_fleet_report
from planner.ssh.fleet_file import FleetHost
from planner.ssh.hosts import SshOptions
from planner.ssh.remote_plan import ConnectionLostError, HostOutcome, run_plan_on_host


@dataclass(frozen=True)
class HostStatus:
    """One host's live line: where its run is (`phase`: waiting, connecting, checking, shipping, starting,
    planning, fetching, done, failed, cancelled) and the latest thing it said."""

    label: str
    host: str
    phase: str
    detail: str = ""


@dataclass
class FleetOutcome:
    """A fleet run: one row per host (in the fleet file's order), the comparison, and each host's outcome."""

    rows: list[FleetRow]
    report: Path
    outcomes: dict[str, HostOutcome] = field(default_factory=dict)  # by label
    interrupted: bool = False


def run_fleet(hosts: list[FleetHost], options: PlanOptions, *, out: Path, ssh: SshOptions,
              on_status: Callable[[HostStatus], None] | None = None, cancel: threading.Event | None = None,
              parallel: int | None = None) -> FleetOutcome:
    """Plan `options` on every host (at most `parallel` at once; all by default), fetch each into
    out/<host folder>/ and write out/fleet/report.md. Ctrl-C (or `cancel`) cancels every host's plan, fetches what
    each measured, and still writes the comparison."""
    cancel = cancel or threading.Event()
    say = on_status or (lambda _status: None)
    slots = threading.Semaphore(max(1, parallel or len(hosts)))
    rows: dict[str, FleetRow] = {}
    outcomes: dict[str, HostOutcome] = {}

    def plan_one(host: FleetHost) -> None:
        spec = host.spec
        status = lambda phase, detail="": say(HostStatus(spec.label, spec.target, phase, detail))  # noqa: E731
        status("waiting", "for a free slot" if parallel else "")
        with slots:
            if cancel.is_set():
                rows[spec.label] = FleetRow(spec.label, spec.target, None, None, "cancelled before it started")
                status("cancelled")
                return

            def on_event(event: Event) -> None:
                if event.kind in ("stage", "candidate", "candidate_done", "warning") and event.message.strip():
                    status("planning", event.message.strip().splitlines()[0])

            try:
                outcome = run_plan_on_host(spec, options, ssh=ssh, local_dir=out / spec.folder_name,
                                           on_event=on_event, on_phase=status, cancel=cancel)
            except ConnectionLostError as exc:
                rows[spec.label] = FleetRow(spec.label, spec.target, None, None, f"{exc.problem} ({exc.fix})")
                status("failed", exc.problem)
                return
            except KeyboardInterrupt as exc:  # `cancel` stopped it; what it measured was fetched
                outcome = getattr(exc, "outcome", None) or HostOutcome(results=None, out_dir=None, spec=spec,
                                                                       failure="cancelled")
                outcome.failure = outcome.failure or "cancelled: the comparison holds what it measured"
                status("cancelled", outcome.failure)
            except PlannerError as exc:
                rows[spec.label] = FleetRow(spec.label, spec.target, None, None,
                                            f"{exc.problem}" + (f" (fix: {exc.fix})" if exc.fix else ""))
                status("failed", exc.problem)
                return
            except Exception as exc:  # noqa: BLE001 - one host's surprise must not end the others
                rows[spec.label] = FleetRow(spec.label, spec.target, None, None, f"{type(exc).__name__}: {exc}")
                status("failed", f"{type(exc).__name__}: {exc}")
                return
            outcomes[spec.label] = outcome
            rows[spec.label] = FleetRow(spec.label, spec.target, outcome.results, outcome.report_path, outcome.failure)

    left = [len(hosts)]
    left_lock = threading.Lock()
    all_done = threading.Event()

    def plan_then_count(host: FleetHost) -> None:
        try:
            plan_one(host)
        finally:
            with left_lock:
                left[0] -= 1
                if left[0] == 0:
                    all_done.set()

    if not hosts:
        all_done.set()
    for host in hosts:
        threading.Thread(target=plan_then_count, args=(host,), name=f"fleet-{host.spec.label}", daemon=True).start()
    # Each host's plan is cancelled there, and what it measured fetched.
    interrupted = wait_interruptible(all_done, on_interrupt=cancel.set)
    ordered = [rows.get(h.spec.label) or FleetRow(h.spec.label, h.spec.target, None, None, "no answer") for h in hosts]
    report = write_fleet_report(ordered, out)
    return FleetOutcome(ordered, report, outcomes, interrupted=interrupted or cancel.is_set())


__all__ = ["FLEET_DIR", "FleetOutcome", "HostStatus", "run_fleet"]
