"""`planner` entry point: parse arguments, dispatch to a subcommand, turn errors into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Callable, Sequence

from planner import __version__
from planner.cli.plan_args import add_model_flags, add_plan_flags, argument_type
from planner.cli.remote import add_ssh_args
from planner.errors import PlannerError
from planner.pipeline.options import duration_s
from planner.tui.startup import pause_gc, resume_gc

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _add_verbose_arg(p: argparse.ArgumentParser) -> None:
    """-v: the progress prints the planner's detail lines, not only stages and results."""
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the detail too: each candidate's predicted band and why, what each step did, "
                        "and every reason in full")


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    """`planner plan`'s flags (the model, the target, requirements, inputs, budget, out), which `fleet` takes too."""
    def output_flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print results.json to stdout")
        _add_verbose_arg(parser)

    add_plan_flags(p, after_model=output_flags)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="planner",
        description="Hardware-aware deployment planner for ML inference. With no command, "
                    "opens the interactive planner on the default demo model.")
    parser.add_argument("--version", action="version", version=f"planner {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    add_ssh_args(parser)  # `planner --host HOST`: the TUI here, its engine on the host
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("detect", help="show this machine's hardware")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--ceilings", action="store_true",
                   help="also measure peak FLOP/s and memory bandwidth (a few seconds)")
    p.add_argument("--refresh", action="store_true",
                   help="with --ceilings: measure again instead of reading the cached ceilings")

    sub.add_parser("models", help="list the model sources the planner can load")

    p = sub.add_parser("plugins", help="list the optimization plugins: what each declares, and any that failed to load")
    p.add_argument("--json", action="store_true", help="print the declarations as JSON")

    p = sub.add_parser("inspect", help="load a model and show what was loaded")
    add_model_flags(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("profile", help="measure the baseline and explain where the time goes")
    add_model_flags(p)
    p.add_argument("--quick", action="store_true", help="short time caps (about 30 s)")
    p.add_argument("--json", action="store_true")
    _add_verbose_arg(p)

    p = sub.add_parser("plan", help="profile, decide, measure candidates, write results")
    _add_plan_args(p)
    p.add_argument("--engine", choices=["inprocess", "subprocess"], default="inprocess",
                   help="run the plan in this process (default, the fastest), or in a `planner engine` process "
                        "driven over its protocol, as the interactive planner does")
    add_ssh_args(p)

    p = sub.add_parser("engine", help="serve the planner's engine protocol on stdin/stdout (the interactive "
                                      "planner starts one; see planner/engine/protocol.py)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--detach", action="store_true",
                     help="start the engine detached from this connection (a run under ~/.cache/planner/runs) and "
                          "relay to it: what `--host` runs on the remote, so a dropped connection does not end a plan")
    how.add_argument("--attach", metavar="RUN", help="relay to a detached run (`latest`: the newest), replaying its "
                                                     "messages from --since on")
    how.add_argument("--runs", action="store_true", help="list the detached runs on this host, as JSON")
    how.add_argument("--daemon", metavar="DIR", help=argparse.SUPPRESS)  # the detached engine itself
    p.add_argument("--since", type=int, default=1, metavar="N",
                   help="with --attach: the first message to replay (1: all after the hello)")
    p.add_argument("--idle-exit", type=argument_type(duration_s), metavar="TIME",
                   help="with --detach: end the engine once it has waited this long with no command and nothing "
                        "running (default 6 hours: time to re-attach after a dropped connection)")

    p = sub.add_parser("bench", help="re-measure one candidate (the report's reproduce command, run from the plan's "
                                     "folder, where results.json is)")
    add_model_flags(p)
    p.add_argument("--candidate", required=True,
                   help="candidate spec (JSON, or a file); a relative artifact path is read from the current folder: "
                        "the plan's records name the artifacts relative to the plan's folder")
    p.add_argument("--quick", action="store_true",
                   help="screen each candidate for about 2 seconds and confirm the leaders, within an 80 s budget "
                        "unless --budget is given")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, default=300.0)

    p = sub.add_parser("verify", help="check a hand-over package (deploy/ in a plan's folder): its files, its "
                                      "outputs against the original model's and its latency against the plan's")
    p.add_argument("folder", metavar="DIR", help="the plan's deploy/ folder, or one package folder in it")
    p.add_argument("--tolerance", type=float, default=10.0, metavar="PCT",
                   help="how far the p50 measured here may be from the plan's, in percent (default 10)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for each package's run")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")

    p = sub.add_parser("preflight", help="show what this machine offers a planner driven over SSH: planner and "
                                         "protocol versions, architecture, Python, glibc, the runtimes that import")
    p.add_argument("--json", action="store_true", help="print the facts as one line of JSON (what a client reads)")
    p.add_argument("--refresh", action="store_true",
                   help="import every runtime again (the last check is kept in the cache until one changes)")

    p = sub.add_parser("report", help="re-render the Markdown report from results.json")
    p.add_argument("results", help="a plan's results.json, or the folder that holds it")
    p.add_argument("--out", help="folder for report.md (default: beside results.json)")

    p = sub.add_parser("tui", help="open the interactive planner")
    add_model_flags(p, required=False)
    add_ssh_args(p)

    p = sub.add_parser("attach", help="re-attach to a plan running on a host over SSH (after a dropped connection): "
                                      "replay its progress, wait for it, fetch its folder")
    p.add_argument("host", metavar="HOST", help="the host, as --host took it")
    p.add_argument("run", metavar="RUN", nargs="?", help="the run (printed when it started; default the newest)")
    p.add_argument("--out", help="local folder for the run's files (default reports/<host>-<run>)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout")
    _add_verbose_arg(p)
    add_ssh_args(p, host=False)

    p = sub.add_parser("fleet", help="plan a model on every host of a fleet file over SSH, then compare them in one "
                                     "report (fleet/report.md)")
    p.add_argument("--hosts", required=True, metavar="FLEET.toml",
                   help="the hosts: [[hosts]] tables with host (an ssh_config alias or user@host[:port]), and "
                        "optionally label and planner (the remote planner command)")
    p.add_argument("--parallel", type=int, metavar="N",
                   help="plan at most N hosts at once (default: all); use 1 for hosts that share one machine, "
                        "whose measurements would slow each other")
    p.add_argument("--tui", action="store_true", help="show the hosts' live status and then the comparison in the "
                                                     "interactive planner's fleet view")
    p.add_argument("--status-lines", action="store_true",
                   help="print each host's status as one JSON line on stdout (for a client such as the fleet view)")
    _add_plan_args(p)
    add_ssh_args(p, host=False)

    p = sub.add_parser("serve", help="serve the interactive planner in a browser on localhost")
    p.add_argument("--port", type=int, default=8000)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in (None, "tui"):
        # Before anything else is imported: the TUI resumes collection once its first model has loaded.
        pause_gc()
    from planner.cli import commands, preflight, remote

    handlers: dict[str | None, Callable[[argparse.Namespace], int]] = {
        None: commands.cmd_default, "detect": commands.cmd_detect, "models": commands.cmd_models,
        "plugins": commands.cmd_plugins,
        "inspect": commands.cmd_inspect, "profile": commands.cmd_profile,
        "plan": commands.cmd_plan, "bench": commands.cmd_bench, "report": commands.cmd_report,
        "verify": commands.cmd_verify, "preflight": preflight.cmd_preflight,
        "attach": remote.cmd_attach, "fleet": remote.cmd_fleet,
        "tui": commands.cmd_tui, "serve": commands.cmd_serve, "engine": commands.cmd_engine,
    }
    try:
        return handlers[args.command](args)
    except PlannerError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc.problem}", file=sys.stderr)
        if exc.fix:
            print(f"  fix: {exc.fix}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - last line of defence: no raw traceback for users
        if args.debug:
            traceback.print_exc()
        else:
            print(f"internal error: {type(exc).__name__}: {exc}\n"
                  "  run again with --debug for the traceback, and report it", file=sys.stderr)
        return 1
    finally:
        resume_gc()  # where the TUI did not open (no terminal) or ended before its first model loaded

