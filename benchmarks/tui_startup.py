"""TUI start-up time, as a user sees it: launch `planner` in a terminal and watch the screen.

Each launch starts the real command (`.venv/bin/planner`, which opens the interactive planner on the
default demo model, demo:inefficient; `--model M` runs `planner tui --model M` instead) in a detached
tmux session of 100x30 on a tmux server of its own, and reads the screen with `tmux capture-pane -p`
every 20 ms from the moment of the launch. So everything a user waits for is in the figures: Python's
start, the imports, the first frame, the engine process (`planner engine`) starting and saying hello
with the hardware, and the engine loading the model. Three moments are timed, in seconds since the
launch:
  - first frame: the planner's own screen is drawn (its step list, or its title bar);
  - hardware facts: step 1 shows the detected machine (its "Device class" and "Cores" rows);
  - model summary: step 1 says the model is loaded ("The demo model demo:inefficient is loaded").

One untimed launch goes first, to warm the disk cache (the first launch after a while reads Python's,
Textual's and PyTorch's files from disk; a user's second launch does not). Each launch then ends
with `q` (and `y` when the planner asks whether to stop the ceilings measurement that follows the
load); the seconds from `q` until the planner exited are printed too. The session is killed if the
planner has not exited 10 s after `q`, and the script waits for the planner and its engine to exit
before the next launch. Every tmux session it creates is killed, and its tmux server with them.

Each capture runs a tmux client process, which takes some of the CPU from the launch it times; the
mean cost of a capture is printed with the figures. On a shared machine the figures move with the
load: the load average before and after is printed, so quote them with it.

A launch is broken when the planner exits before the model is loaded, when its screen says a step
failed or the engine stopped, when a moment is not reached within --timeout seconds, or when the
planner exits with an error on `q`; the script then prints the last screen and exits 1. A slow
launch (or a slow quit) is never an error: the goals are printed beside the medians.

Goals (issue 25), on an idle machine: first frame <= 0.5 s, hardware facts <= 0.8 s, demo model
summary <= 2.0 s.

Usage: .venv/bin/python benchmarks/tui_startup.py [--launches 10] [--model demo:inefficient] [--timeout 120]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
PLANNER = REPO_ROOT / ".venv" / "bin" / "planner"
SIZE = (100, 30)
POLL_S = 0.02
MOMENTS = ("first_frame", "hardware_facts", "model_summary")
LABELS = {"first_frame": "first frame", "hardware_facts": "hardware facts", "model_summary": "model summary"}
GOALS_S = {"first_frame": 0.5, "hardware_facts": 0.8, "model_summary": 2.0}
QUIT_WAIT_S = 10.0
"""How long a launch gets to exit after `q` (and then after its session is killed) before it is ended."""

# What each moment looks like on the screen. The pane's text is read without the step list (left of
# the first "▕" on a line) and with its lines joined, so a sentence the app wrapped still matches.
_FIRST_FRAME = re.compile(r"planner — step|1 Hardware")
_LOADED = re.compile(r"The (?:demo )?model \S+ is loaded")
# What a failed start-up step says (the app's job title, then "failed"), or the engine's death.
_FAILED = re.compile(r"(?:Loading the model|Hardware detection) failed|The planner engine stopped")


@dataclass
class Launch:
    """One launch: the seconds to each moment reached, and why it broke (empty when it did not)."""

    seen: dict[str, float] = field(default_factory=dict)
    broken: str = ""
    last_screen: str = ""
    captures: int = 0
    capture_s: float = 0.0
    ended: str = ""
    quit_s: float = 0.0


class Tmux:
    """A tmux server of the benchmark's own (its own socket), so no one else's sessions are touched."""

    def __init__(self) -> None:
        self.socket = f"planner-bench-{os.getpid()}"
        self.conf = Path(tempfile.mkdtemp(prefix="planner-bench-")) / "tmux.conf"
        # No status line (the pane is the whole 100x30); keep a pane whose program exited, so its
        # exit status can be read.
        self.conf.write_text("set -g status off\nset -g remain-on-exit on\n")

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run one tmux command on this server."""
        out = subprocess.run(["tmux", "-L", self.socket, "-f", str(self.conf), *args], capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:1])} failed (exit {out.returncode}): {out.stderr.strip()}")
        return out

    def capture(self, session: str) -> str:
        """The pane's text as it is on screen now."""
        return self("capture-pane", "-p", "-t", session, check=False).stdout

    def pane(self, session: str, fmt: str) -> str:
        """One of the pane's format variables (#{pane_pid}, #{pane_dead}, ...)."""
        return self("display-message", "-p", "-t", session, fmt, check=False).stdout.strip()

    def kill_server(self) -> None:
        """End this server and every session on it, and remove its socket."""
        self("kill-server", check=False)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (socket_dir / self.socket).unlink(missing_ok=True)
        shutil.rmtree(self.conf.parent, ignore_errors=True)


def pane_text(screen: str) -> str:
    """The screen without the step list, its lines joined into one line of single spaces."""
    parts = [line.split("▕", 1)[1] if "▕" in line else line for line in screen.splitlines()]
    return " ".join(" ".join(parts).split())


def descendants(pid: int) -> list[int]:
    """The processes started under `pid` (the planner, its engine, any worker)."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def alive(pid: int) -> bool:
    """Whether a process still runs (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def launch(tmux: Tmux, command: list[str], number: int, timeout: float) -> Launch:
    """Start the planner in a new session, time the three moments, then quit it and wait until it has exited."""
    session = f"launch{number}"
    result = Launch()
    started = time.monotonic()
    tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-c", str(REPO_ROOT),
         *command)
    try:
        pane_pid = int(tmux.pane(session, "#{pane_pid}") or 0)
        processes: list[int] = []
        while len(result.seen) < len(MOMENTS):
            before = time.monotonic()
            screen = tmux.capture(session)
            now = time.monotonic()
            result.captures += 1
            result.capture_s += now - before
            # The moment the screen was read: the capture's own start, so its cost is not counted.
            at = before - started
            text = pane_text(screen)
            if "first_frame" not in result.seen and _FIRST_FRAME.search(screen):
                result.seen["first_frame"] = at
            if "hardware_facts" not in result.seen and "Device class" in text and "Cores" in text:
                result.seen["hardware_facts"] = at
            if "model_summary" not in result.seen and _LOADED.search(text):
                result.seen["model_summary"] = at
            result.last_screen = screen
            if pane_pid:
                processes = sorted(set(processes) | set(descendants(pane_pid)))
            failed = _FAILED.search(text)
            if failed:
                result.broken = f"the screen says: {failed.group(0)}"
                break
            if tmux.pane(session, "#{pane_dead}") == "1":
                status = tmux.pane(session, "#{pane_dead_status}")
                result.broken = f"the planner exited (status {status or '?'}) before the model was loaded"
                break
            if now - started > timeout:
                missing = ", ".join(LABELS[m] for m in MOMENTS if m not in result.seen)
                result.broken = f"not reached in {timeout:g} s: {missing}"
                break
            time.sleep(max(0.0, POLL_S - (time.monotonic() - before)))
        if pane_pid:  # what started since the last look (the ceilings' measuring process, say)
            processes = sorted(set(processes) | set(descendants(pane_pid)))
        result.ended, result.quit_s = _quit(tmux, session, pane_pid, processes)
        # Slow to quit is noted in the table; a crash on the way out is a broken launch.
        if not result.broken and result.ended not in ("exit 0", "exited", "hung up"):
            result.broken = f"the planner ended with {result.ended} on q"
    finally:
        tmux("kill-session", "-t", session, check=False)
    return result


def _quit(tmux: Tmux, session: str, pane_pid: int, processes: list[int]) -> tuple[str, float]:
    """`q`, and `y` if the planner asks whether to stop a running job; the session is killed (a hang-up)
    if the planner has not exited QUIT_WAIT_S after that. Returns how the planner ended (its exit
    status, or "hung up") and the seconds from `q` until it exited. Every process it started must
    then be gone."""
    tmux("send-keys", "-t", session, "q", check=False)
    asked = time.monotonic()
    answered = False
    ended = ""
    while time.monotonic() < asked + QUIT_WAIT_S:
        ended = _ending(tmux, session)
        if not ended and pane_pid and not alive(pane_pid):
            # Exited, but tmux has not read its status yet (it sometimes leaves the zombie for a while).
            ended = _ending(tmux, session) or "exited"
        if ended:
            break
        if not answered and "Quit anyway?" in pane_text(tmux.capture(session)):
            # A job still runs (the quick ceilings measurement after the load): y stops it and quits.
            tmux("send-keys", "-t", session, "y", check=False)
            answered = True
        time.sleep(0.02)
    took = time.monotonic() - asked
    if not ended:
        running = [f"{pid} {_command_line(pid)}" for pid in [pane_pid, *descendants(pane_pid)] if alive(pid)]
        screen = "\n".join(line for line in tmux.capture(session).splitlines() if line.strip())
        print(f"  the planner did not exit {QUIT_WAIT_S:g} s after q{' and y' if answered else ''}; running: "
              f"{running}; the screen: {screen or '(blank)'}", file=sys.stderr)
    processes = [pane_pid, *processes, *descendants(pane_pid)]
    tmux("kill-session", "-t", session, check=False)
    deadline = time.monotonic() + QUIT_WAIT_S
    while time.monotonic() < deadline and any(alive(pid) for pid in processes):
        time.sleep(0.05)
    left = [pid for pid in processes if alive(pid)]
    if left:
        # Only the processes this launch started, by their id.
        print(f"  warning: processes {left} outlived the planner by {QUIT_WAIT_S:g} s; ending them", file=sys.stderr)
        for pid in left:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
    return ended or "hung up", took


def _command_line(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return "?"


def _ending(tmux: Tmux, session: str) -> str:
    """How the pane's program ended ("exit N" or "signal N"); empty while it runs. tmux marks the pane
    dead when the terminal closes, and fills in the status only once the process has exited."""
    status, signal = tmux.pane(session, "#{pane_dead_status}|#{pane_dead_signal}").partition("|")[::2]
    return f"signal {signal}" if signal else f"exit {status}" if status else ""


def machine(planner: Path) -> str:
    """The CPU model, its cores and its instruction-set extensions, as `planner detect --json` reads them."""
    out = subprocess.run([str(planner), "detect", "--json"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return f"(planner detect failed: {out.stderr.strip()[-300:]})"
    cpu = json.loads(out.stdout)["cpu"]
    isa = ", ".join(cpu.get("features") or []) or "none listed"
    return (f"{cpu['model']} ({cpu['vendor']}, {cpu['architecture']}), {cpu['usable_cores']} usable cores "
            f"of {cpu['logical_cores']} logical; ISA: {isa}")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def print_table(launches: list[Launch]) -> None:
    """Each launch's seconds to each moment, then the median of each and its goal."""
    header = f"{'launch':>6}  " + "  ".join(f"{LABELS[m]:>15}" for m in MOMENTS) + "  captures  quit (s)"
    print(header)
    print("-" * len(header))
    for number, run in enumerate(launches, 1):
        cells = "  ".join(f"{_fmt(run.seen.get(m)):>15}" for m in MOMENTS)
        note = f"  BROKEN: {run.broken}" if run.broken else ""
        quit_s = f"{run.quit_s:.2f}" if run.ended != "hung up" else f"> {QUIT_WAIT_S:g}"
        print(f"{number:>6}  {cells}  {run.captures:>8}  {quit_s:>8}{note}")
    print("-" * len(header))
    medians = {m: statistics.median(v) for m in MOMENTS if (v := [r.seen[m] for r in launches if m in r.seen])}
    print(f"{'median':>6}  " + "  ".join(f"{_fmt(medians.get(m)):>15}" for m in MOMENTS))
    print(f"{'goal':>6}  " + "  ".join(f"{'<= ' + format(GOALS_S[m], '.1f'):>15}" for m in MOMENTS))
    verdicts = [f"{LABELS[m]} {'met' if medians[m] <= GOALS_S[m] else 'missed'}" for m in MOMENTS if m in medians]
    print("goals (on the medians): " + ", ".join(verdicts))


def main(argv: list[str] | None = None) -> int:
    """Warm up once, launch the planner N times, print each launch and the medians; 1 on a broken launch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10, help="timed launches (default 10)")
    parser.add_argument("--model", help="open the planner on this model (`planner tui --model M`) instead of "
                                        "the default demo model")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a launch may take to show the model before it counts as broken (default 120)")
    parser.add_argument("--no-ceilings-cache", action="store_true",
                        help="each timed launch starts with an empty cache folder (PLANNER_CACHE_DIR), as on a first "
                             "start: the ceilings are measured after the model loads and must not delay its summary")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("error: tmux is not installed\n  fix: install it (apt-get install tmux) and run this again",
              file=sys.stderr)
        return 2
    if not PLANNER.exists():
        print(f"error: {PLANNER} does not exist\n  fix: run `make install` in {REPO_ROOT}", file=sys.stderr)
        return 2
    command = [str(PLANNER), *(["tui", "--model", args.model] if args.model else [])]
    print(f"machine: {machine(PLANNER)}")
    print(f"command: {' '.join(command)} in a {SIZE[0]}x{SIZE[1]} tmux pane, screen read every "
          f"{POLL_S * 1000:.0f} ms")
    tmux = Tmux()
    launches: list[Launch] = []
    caches: list[str] = []  # --no-ceilings-cache: each launch's empty cache folder, removed at the end
    try:
        print("warm-up: one untimed launch first (fills the disk cache) ...", flush=True)
        warm = launch(tmux, command, 0, args.timeout)
        if warm.broken:
            print(f"the warm-up launch broke: {warm.broken}\n{warm.last_screen}")
            return 1
        load_before = os.getloadavg()
        for number in range(1, args.launches + 1):
            caches.append(tempfile.mkdtemp(prefix="planner-cache-"))
            fresh = ["env", f"PLANNER_CACHE_DIR={caches[-1]}"]
            launches.append(launch(tmux, [*fresh, *command] if args.no_ceilings_cache else command, number,
                                   args.timeout))
            print(f"  launch {number}: " + ", ".join(f"{LABELS[m]} {_fmt(launches[-1].seen.get(m))} s"
                                                     for m in MOMENTS), flush=True)
        load_after = os.getloadavg()
    finally:
        tmux.kill_server()
        for folder in caches:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average (1 min) {load_before[0]:.2f} before the timed launches, {load_after[0]:.2f} after, "
          f"on {os.cpu_count()} CPUs")
    captures = sum(r.captures for r in launches)
    print(f"a screen capture took {1000 * sum(r.capture_s for r in launches) / max(captures, 1):.1f} ms on average "
          f"({captures} captures); seconds since the launch:\n")
    print_table(launches)
    broken = [(n, r) for n, r in enumerate(launches, 1) if r.broken]
    for number, run in broken:
        print(f"\nlaunch {number} broke: {run.broken}; its last screen:\n{run.last_screen}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
