"""`planner engine`: one `PlanSession` driven by the commands of `planner.engine.protocol`.

The server reads commands on one thread and runs each long step on a worker thread, so `cancel` and
`shutdown` are heard while a step measures. Quick steps (`protocol.QUICK_STEPS`) are answered at once,
even while a long step runs. The engine's stdout carries the protocol and nothing else: `serve_stdio`
moves file descriptor 1 to stderr before anything can print, so a library's print (or a measuring
process's) lands in the engine's log instead of corrupting the stream.

Hang-ups end the engine cleanly: SIGHUP and SIGTERM (a closed terminal, a killed client) and the end
of stdin cancel the running step, end its measuring processes, write what was measured (results.json,
status `interrupted`) and exit. SIGINT (Ctrl-C in a terminal the engine shares) cancels the running step.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

from planner import __version__
from planner.codec import to_data
from planner.engine.protocol import (
    COMMANDS,
    PROTOCOL_VERSION,
    QUICK_STEPS,
    STEPS,
    ProtocolError,
    State,
    decode,
    encode,
    event_message,
)
from planner.engine.startup import limit_cpus, pause_gc, resume_gc
from planner.errors import PlannerError
from planner.events import CancelToken, Event
from planner.pipeline import PlanSession

SessionFactory = Callable[[], PlanSession]

FRESH_CANCEL = ("open", "profile", "optimize", "plan")
"""The commands that start with a fresh cancel flag. The others keep the last run's, which `finish` reads:
a cancelled optimize saved afterwards is saved as interrupted."""

LEFTOVER_WAIT_S = 2.0
"""How long an exiting engine waits for the processes it ended to go."""

STOP_WAIT_S = 5.0
"""How long a hang-up or shutdown waits for the running step to stop before writing what it has."""

STARTUP_LOADS = ("load", "open")
"""The commands that end the start-up's pause of garbage collection when they end (planner.engine.startup);
any other long command ends it as it starts."""

END_POLL_S = 0.1
"""How often a `cancel now` ends the measuring processes its command starts until the command stops."""


class EngineServer:
    """Serve one client: read commands from `reader`, write messages to `writer` (both text streams)."""

    def __init__(self, reader: IO[str], writer: IO[str], *, session_factory: SessionFactory = PlanSession) -> None:
        self.reader = reader
        self.writer = writer
        self.session_factory = session_factory
        self.session = session_factory()
        self._write_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._running: tuple[int, str] | None = None  # the long command in progress: (id, name)
        self._cancel = CancelToken()  # the running command's; `cancel` sets it
        self._stop = threading.Event()
        self._seq = 0
        self._status = "ok"
        self._reason = "the client asked"
        self.hello_extra: dict[str, Any] = {}  # more for the hello (a detached run names its run and folders)

    # -- the stream ----------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line (from any thread); a closed stream is the client gone: stop."""
        line = encode(message) + "\n"
        with self._write_lock:
            try:
                self.writer.write(line)
                self.writer.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._stop.set()

    def hello(self) -> None:
        """The handshake: protocol and planner versions, this process, and the host's hardware."""
        try:
            hardware: Any = to_data(self.session.detect())
        except Exception as exc:  # noqa: BLE001 - the handshake must go out even where detection breaks
            hardware = None
            self._log(0, f"hardware detection failed: {type(exc).__name__}: {exc}")
        self.send({"type": "hello", "protocol": PROTOCOL_VERSION, "planner": __version__, "pid": os.getpid(),
                   "hardware": hardware, **self.hello_extra})

    def state(self) -> State:
        """The session as the client mirrors it."""
        session = self.session
        with self._write_lock:
            self._seq += 1
            seq = self._seq
        return State(seq=seq, discards=discards_of(session), results=to_data(session.results),
                     done=tuple(sorted(str(s) for s in session.done_steps())),
                     stale=tuple(sorted(str(s) for s in session.stale_steps())),
                     out_dir=str(session.out_dir) if session.out_dir else None, replies=dict(session.replies),
                     running=self._running[1] if self._running else "")

    # -- the loop ------------------------------------------------------------------------------
    def serve(self) -> str:
        """Say hello, then answer commands until shutdown, a hang-up or the end of input; returns the final status."""
        self.hello()
        while not self._stop.is_set():
            try:
                line = self.reader.readline()
            except (OSError, ValueError):
                line = ""
            if not line:
                if not self._stop.is_set():
                    self._hang_up("the client closed the connection")
                break
            if line.strip():
                self.handle(line)
        self._finish()
        return self._status

    def handle(self, line: str) -> None:
        """One line from the client: a command, or an error back for anything that is not one."""
        try:
            message = decode(line)
        except ProtocolError as exc:
            self._error(0, str(exc), "send one JSON object per line, with a 'type' (see planner.engine.protocol)")
            return
        kind, command_id = message["type"], message.get("id", 0)
        if not isinstance(command_id, int):
            self._error(0, f"the command's id must be a number, not {command_id!r}", "number each command")
            return
        if kind == "cancel":
            self.cancel(now=bool(message.get("now")))
        elif kind == "shutdown":
            self._hang_up(str(message.get("reason") or "the client asked"), status="ok")
        elif kind == "open":
            self._start(command_id, "open", lambda: self._open(message))
        elif kind == "answer":
            replies = message.get("replies") or {}
            self._quick(command_id, "answer", lambda: self._step_decide(replies=dict(replies)))
        elif kind == "run":
            self._run(command_id, str(message.get("step", "")), message.get("args") or {})
        else:
            self._error(command_id, f"unknown command {kind!r}", f"send one of: {', '.join(COMMANDS)}")

    def _run(self, command_id: int, step: str, args: dict[str, Any]) -> None:
        if step not in STEPS:
            self._error(command_id, f"unknown step {step!r}", f"one of: {', '.join(STEPS)}")
            return
        if not isinstance(args, dict):
            self._error(command_id, f"the arguments of {step!r} must be an object", "send args as {name: value}")
            return
        call = getattr(self, f"_step_{step}")
        if step in QUICK_STEPS:
            self._quick(command_id, step, lambda: call(**args))
        else:
            self._start(command_id, step, lambda: call(**args))

    def _quick(self, command_id: int, name: str, call: Callable[[], Any]) -> None:
        """Answer a quick command on the reading thread; while a long one runs, its events stay the long one's."""
        self._answer(command_id, name, call, own_events=self._running is None)

    def _start(self, command_id: int, name: str, call: Callable[[], Any]) -> None:
        """Run a long command on the worker thread; one at a time, as the measurements must not compete."""
        running = self._running
        if running is not None:
            self._error(command_id, f"busy: {running[1]} is still running", "wait for it, or send cancel")
            return
        if name in FRESH_CANCEL:
            self.session.cancel = CancelToken()
        self._cancel = self.session.cancel
        self._running = (command_id, name)
        if name not in STARTUP_LOADS:
            resume_gc()  # a plan or a profile runs with collection as usual

        def work() -> None:
            try:
                self._answer(command_id, name, call)
            finally:  # answered already, unless it failed outside a step's errors
                if self._running is not None and self._running[0] == command_id:
                    self._running = None

        # After a load has answered, not before: the first collection then scans all the start-up's objects
        # (about 0.2 s), which the answer should not wait for.
        target = _resuming_gc_after(work) if name in STARTUP_LOADS else work
        self._worker = threading.Thread(target=target, name=f"engine-{name}", daemon=True)
        self._worker.start()

    def _answer(self, command_id: int, name: str, call: Callable[[], Any], *, own_events: bool = True) -> None:
        """Run `call` (with its events tagged by `command_id`, when `own_events`), then send its result or error."""
        if own_events:
            self.session.on_event = lambda event: self.send(event_message(command_id, event))
        try:
            value = call()
        except PlannerError as exc:
            if self._cancel.cancelled and self._running is not None and self._running[0] == command_id:
                # Failed because the user stopped it (its measuring process ended): say so, not the step's own fix.
                self._error(command_id, f"{name} was cancelled before it finished ({exc.problem})",
                            f"run {name} again to measure it", kind="Cancelled")
                return
            self._error(command_id, exc.problem, exc.fix, kind=type(exc).__name__)
            return
        except Exception as exc:  # noqa: BLE001 - a step's failure is the client's to show; the engine goes on
            self._error(command_id, f"{name} failed: {type(exc).__name__}: {exc}",
                        "see the engine's log for the details; try the step again", kind=type(exc).__name__)
            return
        self.send({"type": "result", "id": command_id, "value": _value(value), "state": self._answered(command_id)})

    def _error(self, command_id: int, problem: str, fix: str, *, kind: str = "ProtocolError") -> None:
        self.send({"type": "error", "id": command_id, "problem": problem, "fix": fix, "kind": kind,
                   "state": self._answered(command_id)})

    def _answered(self, command_id: int) -> State:
        """The state an answer carries. A long command ends here, before its answer goes out: a client that sends
        the next step as soon as it reads the answer must not find the engine still busy with this one."""
        if self._running is not None and self._running[0] == command_id:
            self._running = None
        return self.state()

    def _log(self, command_id: int, text: str) -> None:
        self.send(event_message(command_id, Event("log", text)))

    # -- stopping ------------------------------------------------------------------------------
    def cancel(self, *, now: bool = False) -> None:
        """Stop the running command at its next safe point; `now` also ends its measuring processes."""
        self._cancel.cancel()
        if now:
            end_measuring_processes()
            running, worker = self._running, self._worker
            if running is not None and worker is not None:
                # A measuring process still starting is not among the children yet (and a step such as the
                # profile reads no cancel flag): keep ending them until the command stops.
                threading.Thread(target=self._end_until_stopped, args=(running[0], worker), daemon=True).start()

    def _end_until_stopped(self, command_id: int, worker: threading.Thread) -> None:
        """End the measuring processes of command `command_id` as they start, until it answers (or a few seconds)."""
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline and self._running is not None and self._running[0] == command_id:
            worker.join(END_POLL_S)
            if self._running is not None and self._running[0] == command_id:
                end_measuring_processes()

    def _hang_up(self, reason: str, *, status: str = "interrupted") -> None:
        """Stop reading: the running step (if any) is cancelled and what it measured is written."""
        running = self._running is not None  # a worker that has sent its answer is not running any more
        self._status = "interrupted" if running else status
        self._reason = reason
        if running:
            self.cancel(now=True)
        self._stop.set()

    def _finish(self) -> None:
        """After the loop: wait briefly for the step to stop, write the results, say goodbye."""
        worker = self._worker
        if worker is not None and worker.is_alive():
            worker.join(STOP_WAIT_S)
        running = self._running
        if running is not None:  # the step would not stop in time: answer for it, so its client is not left waiting
            self._error(running[0], f"{running[1]} was stopped before it finished: {self._reason}",
                        f"start the engine again and run {running[1]} again", kind="Cancelled")
        if self._status == "interrupted" and self.session.out_dir is not None:
            from planner.results import RunStatus

            try:
                self.session.update(status=RunStatus.INTERRUPTED)
                self.session.save()
            except Exception as exc:  # noqa: BLE001 - the goodbye goes out even if the disk refuses
                self._log(0, f"results.json not written: {type(exc).__name__}: {exc}")
        self.send({"type": "bye", "status": self._status, "reason": self._reason,
                   "out_dir": str(self.session.out_dir) if self.session.out_dir else None})

    @property
    def stopped(self) -> bool:
        """Whether the engine has stopped reading commands (shutdown, a hang-up or a signal)."""
        return self._stop.is_set()

    @property
    def idle(self) -> bool:
        """Whether no command is running."""
        return self._running is None

    def hang_up_on_signal(self, signum: int) -> None:
        """A signal handler's work: SIGINT cancels the running step, the others end the engine."""
        if signum == signal.SIGINT:
            self.cancel(now=True)
            return
        self._hang_up(f"the engine received {signal.Signals(signum).name}")
        # The reading thread may sit in readline: closing stdin ends it.
        try:
            os.close(self.reader.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    # -- the steps -----------------------------------------------------------------------------
    def _open(self, message: dict[str, Any]) -> Any:
        """A fresh session from the `open` command's settings; returns the model's description, if one was named."""
        self.session = self.session_factory()
        self.session.cancel = self._cancel
        self.session.on_event = lambda event: self.send(event_message(message.get("id", 0), event))
        session = self.session
        session.detect()
        if message.get("target"):
            session.set_target(str(message["target"]))
        if message.get("requirements") or message.get("requirements_file"):
            toml = message.get("requirements_file")
            session.set_requirements(toml_path=Path(toml) if toml else None,
                                     overrides=dict(message.get("requirements") or {}))
        described = None
        if message.get("model"):
            described = self._step_load(source=str(message["model"]), input_shape=message.get("input_shape"),
                                        inputs=message.get("inputs"), trust_code=bool(message.get("trust_code")))
        if message.get("out"):
            session.set_out_dir(Path(message["out"]))
        return described

    def _step_detect(self) -> Any:
        return self.session.detect()

    def _step_energy(self) -> list[tuple[str, str]]:
        """Each kind of work's energy counter, or why there is none, as labelled lines."""
        from planner.hardware.energy.find import describe

        return [("Energy" if device == "cpu" else "Energy (GPU)", describe(found))
                for device, found in self.session.energy_counters().items()]

    def _step_ceilings(self, quick: bool = False, refresh: bool = False) -> Any:
        return self.session.measure_ceilings(quick=quick, refresh=refresh)

    def _step_demos(self) -> list[tuple[str, str]]:
        """The built-in demo models, as (label, source) pairs."""
        from planner.models.demo import DEMOS

        return [(f"demo:{d.name} — {d.summary}", f"demo:{d.name}") for d in DEMOS.values()]

    def _step_catalog(self) -> Any:
        """What every registered plugin declares (the decision tree names them beside its actions)."""
        from planner.plugins import catalog

        return catalog()

    def _step_load(self, source: str, input_shape: str | None = None, inputs: list[str] | None = None,
                   trust_code: bool = False) -> Any:
        return self.session.load(source, input_shape=input_shape, inputs=inputs, trust_code=trust_code).describe()

    def _step_target(self, target: str = "auto") -> str:
        return self.session.set_target(target)

    def _step_requirements(self, toml_path: str | None = None, overrides: dict | None = None,
                           device_class: str | None = None) -> Any:
        return self.session.set_requirements(toml_path=Path(toml_path) if toml_path else None,
                                             overrides=overrides, device_class=device_class)

    def _step_out_dir(self, out: str | None = None) -> str:
        return str(self.session.set_out_dir(Path(out) if out else None))

    def _step_profile(self, quick: bool = False, timeout_s: float = 600.0, val_data: str | None = None) -> Any:
        if val_data:  # only when given: a session may take no validation data
            return self.session.profile(quick=quick, timeout_s=timeout_s, val_data=Path(val_data))
        return self.session.profile(quick=quick, timeout_s=timeout_s)

    def _step_decide(self, replies: dict | None = None) -> None:
        self.session.decide(replies=replies)

    def _step_plugins(self) -> list[dict]:
        return self.session.plugin_status()

    def _step_optimize(self, plugins: list[str] | None = None, timeout_s: float = 300.0,
                       plugin_options: dict | None = None, confirm: int | None = None) -> int:
        kwargs: dict[str, Any] = {"plugins": plugins, "timeout_s": timeout_s}
        if plugin_options:
            kwargs["plugin_options"] = plugin_options
        if confirm is not None:
            kwargs["confirm"] = confirm
        return len(self.session.optimize(**kwargs)) - 1

    def _step_deploy(self) -> Any:
        return self.session.deploy()

    def _step_verify(self) -> dict[str, Any]:
        """Check the hand-over packages written under deploy/ (files, runtime, fidelity, latency), each in turn."""
        from planner.deploy import DEPLOY_DIR, verify_path

        out_dir = self.session.out_dir
        root = out_dir / DEPLOY_DIR if out_dir is not None else None
        written = [d for d in self.session.results.deployments if d.folder]
        verdicts = verify_path(root) if written and root is not None else []
        return {"root": str(root) if root else None,
                "verdicts": [{"folder": str(v.folder), "label": v.label, "passed": v.passed,
                              "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in v.checks]}
                             for v in verdicts]}

    def _step_finish(self, status: str | None = None, write_report: bool = True) -> dict[str, Any]:
        outcome = self.session.finish(status=status, write_report=write_report)
        return {"out_dir": str(outcome.out_dir), "report_path": str(outcome.report_path) if outcome.report_path
                else None}

    def _step_save(self) -> None:
        self.session.save()

    def _step_plan(self, **options: Any) -> dict[str, Any]:
        """The whole method, as `planner plan` runs it in-process; the session is the plan's own."""
        from planner.engine.plan_options import options_from_data
        from planner.pipeline import run_plan

        captured: dict[str, PlanSession] = {}
        factory = self.session_factory

        def session_of_plan(*, on_event: Any, cancel: CancelToken | None) -> PlanSession:
            session = factory()
            session.on_event, session.cancel = on_event, cancel or self._cancel
            captured["session"] = session
            return session

        outcome = run_plan(options_from_data(options), on_event=self.session.on_event, cancel=self._cancel,
                           session_factory=session_of_plan)
        if "session" in captured:
            self.session = captured["session"]
        return {"out_dir": str(outcome.out_dir), "report_path": str(outcome.report_path) if outcome.report_path
                else None, "status": str(outcome.results.status)}


def discards_of(session: PlanSession) -> dict[str, tuple[str, ...]]:
    """Per change, the steps holding a result (up to date or stale) that the change would discard."""
    from planner.pipeline.steps import Change, Fate, invalidated_by

    held = session.done_steps() | session.stale_steps()
    return {str(change): tuple(str(step) for step, fate in invalidated_by(change).items()
                               if fate is Fate.DISCARDED and step in held) for change in Change}


def _value(value: Any) -> Any:
    """A step's return value as the `result` carries it (typed values through the codec)."""
    if dataclasses.is_dataclass(value) or isinstance(value, (list, tuple, dict)):
        return to_data(value)
    return value


def _resuming_gc_after(call: Callable[[], Any]) -> Callable[[], Any]:
    """`call`, after which collection resumes: the start-up's pause ends with the first load, loaded or failed."""
    def resuming() -> Any:
        try:
            return call()
        finally:
            resume_gc()

    return resuming


def end_measuring_processes() -> None:
    """End the measuring processes of the running step, so it stops now rather than after the measurement."""
    for child in multiprocessing.active_children():
        child.terminate()


def end_leftovers() -> None:
    """End every process the engine started and left running (measuring processes, torch.compile's pool of
    workers), so that its exit neither waits for them (multiprocessing joins its children at exit) nor leaves
    them behind."""
    import psutil

    from planner.supervise import end_processes

    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    end_processes(children, wait_s=LEFTOVER_WAIT_S)


def serve_stdio(*, session_factory: SessionFactory = PlanSession) -> int:
    """`planner engine`: serve the protocol on stdin/stdout until shutdown or hang-up; 0 when it ended cleanly."""
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so nothing printed by a library,
    # a C extension or a measuring process (which inherits fd 1) can break a line of the protocol.
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    writer = os.fdopen(protocol_fd, "w", encoding="utf-8", buffering=1)
    return serve_streams(sys.stdin, writer, session_factory=session_factory)


def serve_streams(reader: IO[str], writer: IO[str], *, session_factory: SessionFactory = PlanSession,
                  hello_extra: dict[str, Any] | None = None,
                  on_start: Callable[[EngineServer], None] | None = None, hangup_signals: bool = True) -> int:
    """Serve one engine on `reader`/`writer` in this process (stdio, or a detached run's FIFO and log) with its
    signal handling; `on_start` runs on a thread beside it. Returns 0 when it ended cleanly."""
    pause_gc()  # until the first model load has ended (planner.engine.startup)
    limit_cpus()
    server = EngineServer(reader, writer, session_factory=session_factory)
    server.hello_extra = dict(hello_extra or {})
    engine_pid = os.getpid()

    def on_signal(number: int, _frame: Any) -> None:
        if os.getpid() != engine_pid:
            # A process forked from the engine (torch.compile's workers) inherits this handler: it is not the
            # engine, so the signal does what it would have done (SIGTERM ends it).
            signal.signal(number, signal.SIG_DFL)
            signal.raise_signal(number)
            return
        server.hang_up_on_signal(number)

    # A detached engine has no terminal: a hang-up signal is no reason to stop it.
    for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal if hangup_signals or signum != signal.SIGHUP else signal.SIG_IGN)
    if on_start is not None:
        threading.Thread(target=on_start, args=(server,), name="engine-watch", daemon=True).start()
    status = server.serve()
    code = 0 if status in ("ok", "interrupted") else 1
    end_leftovers()
    worker = server._worker
    if worker is not None and worker.is_alive():
        # A step that would not stop in time still runs on its thread, often in native code: finalizing the
        # interpreter under it aborts the process (SIGABRT). Its results are written and the goodbye sent: leave now.
        sys.stderr.flush()
        os._exit(code)
    return code
