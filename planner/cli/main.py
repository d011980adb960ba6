"""`planner` entry point: parse arguments, dispatch to a subcommand, turn errors into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Callable, Sequence

from planner import __version__
from planner.cli.remote import add_ssh_args
from planner.errors import PlannerError
from planner.tui.startup import pause_gc, resume_gc

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _add_model_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("--model", "-m", required=required,
                   help="model source: demo:<name>, tv:<name>, file.py:factory, model.onnx, "
                        "model.pt2, model.pt (see `planner models`)")
    p.add_argument("--input", action="append", dest="inputs", metavar="NAME:SHAPE:DTYPE[:LOW-HIGH|:VALUE]",
                   help="one model input (repeat for each), e.g. --input input_ids:1x128:int64:0-30522 "
                        "--input attention_mask:1x128:int64; the range's upper end is excluded; an empty "
                        "shape is a scalar and one value fixes it: --input sr::int64:16000")
    p.add_argument("--input-shape", help="shape of a model's one float input, batch first, e.g. 1x3x224x224")
    p.add_argument("--trust-code", action="store_true",
                   help="allow importing and running a Python model file")


def _add_verbose_arg(p: argparse.ArgumentParser) -> None:
    """-v: the progress prints the planner's detail lines, not only stages and results."""
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the detail too: each candidate's predicted band and why, what each step did, "
                        "and every reason in full")


def _duration_s(text: str) -> float:
    """A duration given as 90s, 5m, 1.5m or a bare number of seconds, in seconds."""
    raw = text.strip().lower()
    scale = 60.0 if raw.endswith("m") else 1.0
    number = raw[:-1] if raw[-1:] in ("s", "m") else raw
    try:
        seconds = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration: write it as 90s, 5m or 120") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the budget must be more than 0 seconds")
    return seconds


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    """`planner plan`'s flags (the model, the target, requirements, inputs, budget, out), which `fleet` takes too."""
    _add_model_args(p)
    p.add_argument("--target", choices=["auto", "cpu", "nvidia", "edge"], default="auto")
    p.add_argument("--device", help="edge board to project each candidate onto (rpi4, rpi5, orin-nano, agx-orin, "
                                    "generic-arm): a labelled estimate from datasheet ceilings")
    p.add_argument("--quick", action="store_true",
                   help="screen each candidate for about 2 seconds and confirm the leaders, within an 80 s budget "
                        "unless --budget is given")
    p.add_argument("--confirm", type=int, default=3, metavar="N",
                   help="with --quick, measure the N leaders again with the full method before ranking "
                        "(default 3; 0 ranks the 2-second screen as it is)")
    p.add_argument("--budget", type=_duration_s, metavar="TIME",
                   help="cap the whole plan's time, e.g. 90s, 5m or 120 (seconds; a quick plan's default is 80s): "
                        "what can end ranked is screened first, each runtime's most promising setting before its "
                        "others, and the report says what the budget cut")
    p.add_argument("--out", help="output folder (default reports/<date>-<model>-<target>)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout")
    _add_verbose_arg(p)
    p.add_argument("--requirements", help="TOML file with latency_ms, min_throughput, ...")
    p.add_argument("--latency-ms", type=float, help="latency SLA in ms")
    p.add_argument("--latency-percentile", choices=["p50", "p95", "p99"])
    p.add_argument("--min-throughput", type=float, help="minimum samples/s")
    p.add_argument("--memory-mb", type=float, help="peak memory budget in MB")
    p.add_argument("--model-size-mb", type=float, help="model size budget in MB")
    p.add_argument("--accuracy-drop", type=float, help="largest accuracy drop allowed (0.01 = 1%%)")
    p.add_argument("--val-data", help="folder of images (.png/.jpg; one sub-folder per class for labels), .wav "
                                      "clips, or .npy input batches (.npz, one array per input, for several "
                                      "inputs) and NAME_labels.npy files, for accuracy")
    p.add_argument("--val-preset", choices=["imagenet", "unit", "symmetric"],
                   help="how --val-data images are normalised: imagenet (mean/std), unit (0-1), symmetric "
                        "(-1-1); default imagenet for RGB inputs, unit for greyscale")
    p.add_argument("--val-transform", metavar="FILE.py:FN",
                   help="your own conversion of each --val-data image (a PIL image) or clip (its path) to an "
                        "array in the input's shape without the batch (runs your code: needs --trust-code)")
    p.add_argument("--val-sample-rate", type=int, metavar="HZ",
                   help="the rate --val-data .wav clips are resampled to, when the model has no fixed "
                        "sample-rate input")
    p.add_argument("--plugins", help="comma-separated plugin names to run (default: the plan's)")
    p.add_argument("--finetune-steps", type=int,
                   help="fine-tuning steps: ternary-aware for the ternary candidate, and for a pruning or low-rank "
                        "setting that fails the fidelity check (needs labelled data: demo:digits or --val-data "
                        "with labels)")
    p.add_argument("--output-kind", action="append", dest="output_kinds", metavar="NAME=KIND",
                   help="what the compared (first) output is, which decides how candidates are judged: classes, "
                        "dense (a map per pixel), sequence (class scores per position) or regression; NAME is "
                        "the output's name or 0 (default: read from the output's shape)")
    p.add_argument("--pipeline", metavar="FILE.py:PRE[,POST]",
                   help="also time your whole request, with the original model and with the plan's winner: "
                        "PRE(raw sample) returns the model's input (an array in the input's shape without the "
                        "batch axis, or with it; a dict of arrays by input name for several inputs, dtype as "
                        "the model takes it); the optional POST(output) takes the first output as a numpy array. "
                        "Raw samples come from samples() or a SAMPLES list in FILE.py, else the files of "
                        "--val-data (as paths). The checklist then answers whether the model or the work around "
                        "it is the bottleneck (runs your code: needs --trust-code)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate")


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
    _add_model_args(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("profile", help="measure the baseline and explain where the time goes")
    _add_model_args(p)
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
    p.add_argument("--idle-exit", type=_duration_s, metavar="TIME",
                   help="with --detach: end the engine once it has waited this long with no command and nothing "
                        "running (default 6 hours: time to re-attach after a dropped connection)")

    p = sub.add_parser("bench", help="re-measure one candidate (the report's reproduce command)")
    _add_model_args(p)
    p.add_argument("--candidate", required=True, help="candidate spec (JSON, or a file)")
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
    _add_model_args(p, required=False)
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

