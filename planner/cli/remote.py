"""The CLI over SSH: `plan --host`, `attach`, `fleet`, and the TUI against a remote engine (`planner --host`)."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from planner.cli.fleet_progress import FleetProgress
    from planner.engine.client import EngineClient, EngineDiedError
    from planner.ssh.fleet import HostStatus
    from planner.ssh.fleet_lines import FleetMessage
    from planner.ssh.hosts import HostSpec, SshOptions

EXIT_INTERRUPTED = 130

TUI_IDLE_EXIT_S = 900.0
"""How long an engine the TUI started on a host waits for it after the connection dropped, before ending itself."""


def add_ssh_args(p: argparse.ArgumentParser, *, host: bool = True) -> None:
    """The flags every command that reaches a host over SSH takes."""
    if host:
        p.add_argument("--host", metavar="HOST",
                       help="run the engine on HOST over SSH: an ssh_config alias, or user@host[:port] (keys from "
                            "~/.ssh and the agent; the host's key must be in known_hosts)")
    p.add_argument("--remote-planner", metavar="PATH", default="planner",
                   help="the planner command on the host (default `planner` on its login PATH)")
    p.add_argument("--accept-new-host-key", action="store_true",
                   help="trust a host seen for the first time and add its key to known_hosts (a changed key is "
                        "refused all the same)")
    p.add_argument("--ssh-config", metavar="FILE", action="append",
                   help="an ssh_config file to read instead of ~/.ssh/config (repeat for several)")
    p.add_argument("--known-hosts", metavar="FILE", help="the known_hosts file (default ~/.ssh/known_hosts)")


def ssh_options(args: argparse.Namespace) -> SshOptions:
    """The connection flags as `SshOptions`."""
    from planner.ssh.hosts import SshOptions

    return SshOptions(accept_new_host_key=args.accept_new_host_key,
                      config_paths=tuple(Path(p).expanduser() for p in args.ssh_config or ()),
                      known_hosts=Path(args.known_hosts).expanduser() if args.known_hosts else None)


def host_spec(text: str, args: argparse.Namespace) -> HostSpec:
    """`--host` as a `HostSpec`, with the remote planner command."""
    from planner.ssh.hosts import HostSpec

    return HostSpec.parse(text, planner=args.remote_planner)


def _phase_printer(label: str) -> Callable[[str, str], None]:
    def say(phase: str, detail: str) -> None:
        print(f"[{label}] {phase}: {detail}", file=sys.stderr, flush=True)
    return say


def cmd_plan_host(args: argparse.Namespace) -> int:
    """`planner plan --host HOST`: the plan runs on the host; its folder comes back here."""
    from planner.cli.output import print_outcome
    from planner.cli.plan_args import plan_options
    from planner.cli.progress import CliProgress
    from planner.pipeline.budget import plan_budget_s
    from planner.ssh.remote_plan import ConnectionLostError, run_plan_on_host

    spec = host_spec(args.host, args)
    options = plan_options(args)
    local_dir = Path(args.out) if args.out else None
    budget_s = plan_budget_s(options.budget_s, quick=options.quick)
    try:
        with CliProgress(enabled=True, budget_s=budget_s, verbose=args.verbose) as progress:
            outcome = run_plan_on_host(spec, options, ssh=ssh_options(args), local_dir=local_dir, on_event=progress,
                                       on_phase=_phase_printer(spec.label))
    except ConnectionLostError as exc:
        print(f"error: {exc.problem}\n  fix: {exc.fix}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        kept = getattr(exc, "outcome", None)
        if kept is not None:
            print_outcome(kept)
            print("interrupted: the plan on the host was cancelled; what it measured is above", file=sys.stderr)
        return EXIT_INTERRUPTED
    return print_outcome(outcome, json_out=args.json)


def cmd_attach(args: argparse.Namespace) -> int:
    """`planner attach HOST [RUN]`: re-attach to a run on the host, replay its progress, fetch its folder."""
    from planner.cli.output import print_outcome
    from planner.cli.progress import CliProgress
    from planner.ssh.remote_plan import ConnectionLostError, attach_host

    spec = host_spec(args.host, args)
    try:
        with CliProgress(enabled=True, verbose=args.verbose) as progress:
            outcome = attach_host(spec, args.run or "latest", ssh=ssh_options(args),
                                  local_dir=Path(args.out) if args.out else None, on_event=progress,
                                  on_phase=_phase_printer(spec.label))
    except ConnectionLostError as exc:
        print(f"error: {exc.problem}\n  fix: {exc.fix}", file=sys.stderr)
        return 1
    return print_outcome(outcome, json_out=args.json)


def cmd_fleet(args: argparse.Namespace) -> int:
    """`planner fleet --hosts fleet.toml --model M`: plan every host, then one comparison report."""
    from planner.cli.fleet_progress import FleetProgress
    from planner.cli.plan_args import plan_options
    from planner.models.source import parse_source
    from planner.pipeline.outdir import default_out_dir
    from planner.ssh.fleet import run_fleet
    from planner.ssh.fleet_file import read_fleet_file

    hosts = read_fleet_file(Path(args.hosts))
    if args.tui:
        from planner.tui.fleet_app import run_fleet_tui

        argv = [a for a in sys.argv[1:] if a != "--tui"]
        return run_fleet_tui([sys.executable, "-m", "planner.cli", *argv, "--status-lines"],
                             [(h.spec.label, h.spec.target) for h in hosts])
    options = plan_options(args)
    # reports/<date>-<model>-fleet, as a plan's folder is named (a counter where that one holds an earlier run)
    out = Path(args.out) if args.out else default_out_dir(parse_source(options.model).short_name, "fleet")
    cancel = threading.Event()
    progress: FleetProgress | StatusLines = (StatusLines() if args.status_lines
                                             else FleetProgress([h.spec for h in hosts]))
    try:
        with progress:
            outcome = run_fleet(hosts, options, out=out, ssh=ssh_options(args), on_status=progress.update,
                                cancel=cancel, parallel=args.parallel)
    except KeyboardInterrupt:
        print("interrupted: the hosts' plans were cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.status_lines:
        from planner.ssh.fleet_lines import DoneLine, HostEnd

        print_line(DoneLine(report=str(outcome.report), interrupted=outcome.interrupted, rows=tuple(
            HostEnd(label=r.label, host=r.host, failure=r.failure,
                    status=r.results.status.value if r.results is not None else None,
                    report=str(r.report) if r.report else None) for r in outcome.rows)))
        return EXIT_INTERRUPTED if outcome.interrupted else 0
    for row in outcome.rows:
        status = row.failure or (row.results.status.value if row.results is not None else "no results")
        print(f"{row.label}: {status}")
    print(f"\nComparison {outcome.report}")
    if outcome.interrupted:
        print("interrupted: the hosts' plans were cancelled; the comparison holds what they measured", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0 if any(row.results is not None and not row.failure for row in outcome.rows) else 1


_PRINT_LOCK = threading.Lock()


def print_line(message: "FleetMessage") -> None:
    """One message on one line of stdout, flushed (`fleet --status-lines`). The hosts' threads all print: the
    line goes out in one write under a lock, or two hosts' lines could interleave into one unreadable line."""
    from planner.ssh.fleet_lines import encode

    line = encode(message) + "\n"
    with _PRINT_LOCK:
        sys.stdout.write(line)
        sys.stdout.flush()


class StatusLines:
    """`fleet --status-lines`: each host's status as one JSON line on stdout, for a client (the TUI's fleet view)."""

    def __enter__(self) -> StatusLines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, status: HostStatus) -> None:
        """Print the status as a status line (planner.ssh.fleet_lines)."""
        from planner.ssh.fleet_lines import StatusLine

        print_line(StatusLine(label=status.label, host=status.host, phase=status.phase, detail=status.detail))


def tui_connector(args: argparse.Namespace) -> tuple[Callable[[Callable[[EngineDiedError], None]], EngineClient], str]:
    """For `planner --host HOST`: how the TUI starts its engine on the host (again after a dropped connection), the
    model source as the host sees it (a local file is shipped first), and the host's name for the header."""
    from planner.ssh.remote_plan import HostConnection, model_on_host

    spec = host_spec(args.host, args)
    options = ssh_options(args)

    def connect(on_death: Callable[[EngineDiedError], None]) -> EngineClient:
        host = HostConnection(spec, options)
        host.open()
        # The TUI cannot re-attach: an engine it left behind (a closed laptop) waits a shorter while.
        return host.engine("--detach", "--idle-exit", f"{TUI_IDLE_EXIT_S:g}", on_death=on_death)

    # Once before the TUI takes the terminal: an unknown host key or a refused login is said plainly here, and a
    # local model file is shipped.
    host = HostConnection(spec, options)
    try:
        host.open(_phase_printer(spec.label))
        if args.model:
            args.model = model_on_host(args.model, host)
    finally:
        host.close()
    return connect, spec.label

