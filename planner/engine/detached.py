"""An engine that outlives its connection: the remote half of `planner --host`, `plan --host` and `attach`.

Over SSH the channel can drop at any time (Wi-Fi, a laptop lid), and a plan on a small board takes minutes.
So the remote engine does not live on the channel. `planner engine --detach` starts it as a daemon in its
own session, in a run folder under the per-user cache (`<cache>/runs/<run>/`):

``commands``        a FIFO the engine reads commands from (it holds it open for writing too, so a client that
                    goes away is not an end of input)
``messages.jsonl``  every message the engine sends, one per line, the hello first: the whole run, replayable
``engine.pid``      the engine's process id; ``run.json`` when and on which boot it started
``engine.log``      what the engine and its libraries printed
``out/``            the plan's folder (results.json, report, figures, deploy package)

The SSH command itself is a relay (`planner engine --attach RUN --since N`): it copies the client's lines into
`commands` and follows `messages.jsonl` out to the client, from the hello and then line N on. When the channel
drops, only the relay ends; reconnecting starts another relay that replays what was missed. The relay stops
at the engine's goodbye, or when the engine is gone with nothing left to read (exit status `GONE`, or
`REBOOTED` when the host booted since the run started), so a client can say why.

The daemon ends itself once it has been idle (no command, nothing running) for `IDLE_EXIT_S`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, NoReturn

RUNS_DIR = "runs"
COMMANDS = "commands"
MESSAGES = "messages.jsonl"
PID_FILE = "engine.pid"
RUN_FILE = "run.json"
LOG_FILE = "engine.log"
OUT_DIR = "out"

GONE = 3
"""The relay's exit status when the engine ended without a goodbye (killed, crashed) and its log is read out."""
REBOOTED = 4
"""The relay's exit status when the engine is gone because the host booted since the run started."""
NO_RUN = 5
"""The relay's exit status when the run named does not exist."""

IDLE_ENV = "PLANNER_ENGINE_IDLE_EXIT_S"
IDLE_EXIT_S = float(os.environ.get(IDLE_ENV, 6 * 3600))
"""How long a detached engine waits, idle, for a client to come back before it ends itself (`--idle-exit`)."""

HELLO_WAIT_S = 120.0
FOLLOW_POLL_S = 0.05
ALIVE_CHECK_S = 1.0
"""How long a new daemon may take to say hello (a board's cold start imports torch from an SD card), how often
the relay looks for new lines, and how often it checks that the engine is still there."""


def runs_root() -> Path:
    """`<cache>/runs`: the detached runs of this user (the cache is $PLANNER_CACHE_DIR, else ~/.cache/planner)."""
    from planner.paths import cache_dir

    return cache_dir() / RUNS_DIR


def boot_id() -> str:
    """This boot of the host (Linux's random boot id), to tell a reboot from a crash; "" where there is none."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def new_run_dir(root: Path | None = None) -> Path:
    """A fresh run folder with its FIFO: named by the time it starts and a few random letters."""
    root = root or runs_root()
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = root / f"{stamp}-{secrets.token_hex(3)}"
    run_dir.mkdir(mode=0o700)
    os.mkfifo(run_dir / COMMANDS, 0o600)
    (run_dir / RUN_FILE).write_text(json.dumps({"run": run_dir.name, "started": datetime.now(timezone.utc).isoformat(),
                                                "boot_id": boot_id()}), encoding="utf-8")
    return run_dir


def find_run(name: str, root: Path | None = None) -> Path | None:
    """The run folder named `name` (`latest`: the newest), or None. A name with a path in it is no run."""
    root = root or runs_root()
    if name == "latest":
        runs = sorted(p for p in root.glob("*") if (p / RUN_FILE).is_file()) if root.is_dir() else []
        return runs[-1] if runs else None
    if not name or "/" in name or name.startswith("."):
        return None
    run_dir = root / name
    return run_dir if (run_dir / RUN_FILE).is_file() else None


def engine_alive(run_dir: Path) -> bool:
    """Whether the run's engine process still exists (on this boot)."""
    try:
        pid = int((run_dir / PID_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return False
    if not _same_boot(run_dir):
        return False  # the pid belongs to an earlier boot: whatever has it now is not our engine
    import psutil

    return psutil.pid_exists(pid)  # another user's process is there too: the pid is taken, as ours was


def _same_boot(run_dir: Path) -> bool:
    try:
        started_on = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8")).get("boot_id", "")
    except (OSError, ValueError):
        return True
    now = boot_id()
    return not (started_on and now and started_on != now)


# -- the daemon ---------------------------------------------------------------------------------
def start_daemon(run_dir: Path, command: list[str] | None = None, *, idle_exit_s: float | None = None
                 ) -> subprocess.Popen:
    """Start the engine for `run_dir` in its own session, its output in the run's log; returns at once. `command`
    (the run folder is added to it) replaces `planner engine --daemon` (a scripted engine, in tests)."""
    log = open(run_dir / LOG_FILE, "ab")  # noqa: SIM115 - the daemon keeps it
    argv = [*(command or [sys.executable, "-m", "planner.cli", "engine", "--daemon"]), str(run_dir)]
    try:
        env = {**os.environ, **({IDLE_ENV: f"{idle_exit_s:g}"} if idle_exit_s else {})}
        daemon = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True, close_fds=True, cwd=str(run_dir))
    finally:
        log.close()
    # Before the relay looks for it: a run with no pid yet (or half of one) would read as an engine already gone.
    _write_pid(run_dir, daemon.pid)
    return daemon


def _write_pid(run_dir: Path, pid: int) -> None:
    from planner.io import write_text_atomic

    write_text_atomic(run_dir / PID_FILE, str(pid))


class _TimedReader:
    """The commands FIFO as a text stream that remembers when the last line came (for the idle exit)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.last = time.monotonic()

    def readline(self) -> str:
        line = self.stream.readline()
        self.last = time.monotonic()
        return line

    def fileno(self) -> int:
        return self.stream.fileno()


def serve_daemon(run_dir: Path, *, session_factory: Callable[[], Any] | None = None) -> int:
    """`planner engine --daemon DIR`: serve the protocol from the run's FIFO into its message log until shutdown,
    SIGTERM, or `IDLE_EXIT_S` idle (`session_factory`: another session than the planner's, for scripted tests)."""
    from planner.engine import server as engine_server

    _write_pid(run_dir, os.getpid())
    # Read and write: the FIFO then always has a writer, so a relay that goes is no end of input.
    fd = os.open(run_dir / COMMANDS, os.O_RDWR)
    reader = _TimedReader(os.fdopen(fd, "r", encoding="utf-8"))
    writer = open(run_dir / MESSAGES, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the engine
    extra = {"run": run_dir.name, "run_dir": str(run_dir), "out": str(run_dir / OUT_DIR)}

    def watch_idle(server: engine_server.EngineServer) -> None:
        while not server.stopped:
            time.sleep(min(60.0, IDLE_EXIT_S / 4))
            if server.idle and time.monotonic() - reader.last > IDLE_EXIT_S:
                # Through the FIFO, as a client's shutdown: a thread cannot wake the reading thread otherwise.
                from planner.engine.protocol import Shutdown, encode

                shutdown = encode(Shutdown(reason=f"no client for {IDLE_EXIT_S:g} s"))
                with open(run_dir / COMMANDS, "w", encoding="utf-8") as fifo:
                    fifo.write(shutdown + "\n")
                return

    return engine_server.serve_streams(reader, writer,  # type: ignore[arg-type]  # readline is all it reads
                                       session_factory=session_factory or engine_server.PlanSession,
                                       hello_extra=extra, on_start=watch_idle, hangup_signals=False)


# -- the relay ----------------------------------------------------------------------------------
def relay(run_dir: Path, *, since: int = 1, out: IO[bytes] | None = None, inp: IO[bytes] | None = None) -> int:
    """Connect this process's stdin/stdout to the run's engine: the hello, then every message from line `since` on,
    live; the client's lines go to the engine. Returns 0 at the engine's goodbye, `GONE` or `REBOOTED` when the
    engine ended without one, and 0 as soon as the client closes its side (the engine goes on)."""
    out = out or sys.stdout.buffer
    inp = inp or sys.stdin.buffer
    log_path = run_dir / MESSAGES
    deadline = time.monotonic() + HELLO_WAIT_S
    while not (log_path.is_file() and log_path.stat().st_size) and time.monotonic() < deadline:
        if not engine_alive(run_dir) and (run_dir / PID_FILE).exists():
            break
        time.sleep(FOLLOW_POLL_S)
    client_gone = threading.Event()
    threading.Thread(target=_forward_commands, args=(run_dir, inp, client_gone), name="relay-in", daemon=True).start()
    index = 0
    pending = b""
    last_check = 0.0
    try:
        log = open(log_path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        print(f"the run {run_dir.name} has no messages: its engine never started (see {run_dir / LOG_FILE})",
              file=sys.stderr)
        return GONE
    with log:
        while not client_gone.is_set():
            chunk = log.read(1 << 16)
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if index == 0 or index >= since:
                        out.write(line + b"\n")
                    index += 1
                    if _is_goodbye(line):
                        out.flush()
                        return 0
                out.flush()
                continue
            now = time.monotonic()
            if now - last_check >= ALIVE_CHECK_S:
                last_check = now
                if not engine_alive(run_dir):
                    if log.read(1):  # lines written just before it went
                        log.seek(-1, os.SEEK_CUR)
                        continue
                    rebooted = not _same_boot(run_dir)
                    print("the host rebooted since the run started: its engine is gone" if rebooted
                          else "the run's engine ended without a goodbye (killed or crashed)", file=sys.stderr)
                    return REBOOTED if rebooted else GONE
            time.sleep(FOLLOW_POLL_S)
    return 0  # the client has gone: so does the relay (the engine goes on)


def _is_goodbye(line: bytes) -> bool:
    """Whether a logged line is the engine's goodbye (decoded only when it may be one: most lines are events)."""
    if b'"bye"' not in line:
        return False
    try:
        return json.loads(line).get("type") == "bye"
    except (ValueError, AttributeError):
        return False


def _forward_commands(run_dir: Path, inp: IO[bytes], client_gone: threading.Event) -> None:
    """The client's lines into the engine's FIFO; at the end of the client's input, the relay ends (not the engine)."""
    try:
        # Non-blocking open: it fails at once (ENXIO) when no engine reads the FIFO any more.
        fd = os.open(run_dir / COMMANDS, os.O_WRONLY | os.O_NONBLOCK)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.ENOENT):
            raise
        fd = -1  # the engine is gone: its log can still be replayed, commands have nowhere to go
    try:
        for line in iter(inp.readline, b""):
            if fd >= 0:
                try:
                    os.write(fd, line)  # one line under PIPE_BUF is written whole, even beside another relay
                except OSError:
                    fd = -1
    except (OSError, ValueError):
        pass  # the client's input broke or was closed under us: the client has gone all the same
    if fd >= 0:
        os.close(fd)
    client_gone.set()


def detach_and_relay(daemon_command: list[str] | None = None, *, idle_exit_s: float | None = None) -> NoReturn:
    """`planner engine --detach`: a new run with its daemon, then the relay to it (from the hello on)."""
    run_dir = new_run_dir()
    start_daemon(run_dir, daemon_command, idle_exit_s=idle_exit_s)
    _exit_now(relay(run_dir, since=1))


def attach_relay(name: str, since: int) -> int:
    """`planner engine --attach RUN --since N`: the relay to an existing run (`latest`: the newest)."""
    run_dir = find_run(name)
    if run_dir is None:
        print(f"no run {name!r} under {runs_root()}", file=sys.stderr)
        return NO_RUN
    _exit_now(relay(run_dir, since=max(1, since)))


def _exit_now(code: int) -> NoReturn:
    """End the relay process with `code` at once: its reading thread may sit in a read of stdin, and finishing the
    interpreter under it aborts the process (SIGABRT), which the client would read as the engine's death."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def list_runs() -> list[dict[str, Any]]:
    """The runs on this host, oldest first: name, start, folder, whether its engine still runs, and whether the host
    rebooted since it started."""
    root = runs_root()
    rows = []
    for run_dir in sorted(root.glob("*")) if root.is_dir() else []:
        try:
            info = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        rows.append({"run": run_dir.name, "started": info.get("started"), "running": engine_alive(run_dir),
                     "dir": str(run_dir), "rebooted": not _same_boot(run_dir)})
    return rows
