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
from planner.engine import protocol as wire
from planner.engine.llm import LlmPlanner
from planner.engine.protocol import (
    COMMANDS,
    PROTOCOL_VERSION,
    Bye,
    Cancel,
    Command,
    Error,
    Hello,
    Message,
    ProtocolError,
    Result,
    Shutdown,
    State,
    decode_command,
    encode,
    event_message,
)
from planner.engine.startup import limit_cpus, pause_gc, resume_gc, start_processes_from_a_server
from planner.errors import PlannerError
from planner.events import CancelToken, Event
from planner.pipeline import PlanOutcome, PlanSession

SessionFactory = Callable[[], PlanSession]

LEFTOVER_WAIT_S = 2.0
"""How long an exiting engine waits for the processes it ended to go."""

STOP_WAIT_S = 5.0
"""How long a hang-up or shutdown waits for the running step to stop before writing what it has."""

END_POLL_S = 0.1
"""How often a `cancel now` ends the measuring processes its command starts until the command stops."""


class EngineServer:
    """Serve one client: read commands from `reader`, write messages to `writer` (both text streams)."""

    def __init__(self, reader: IO[str], writer: IO[str], *, session_factory: SessionFactory = PlanSession,
                 llm_planner: LlmPlanner | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.session_factory = session_factory
        self.session = session_factory()
        self.llm: wire.LlmFolder | None = None  # the decoder LLM folder loaded in the model's place, if any
        self.llm_planner = llm_planner  # what runs its plan (None: planner.llm.plan.run_llm_plan)
        # One lock for the stream and the states: a state is made and sent in one go, so the client reads the
        # states in the order they were made, and each one's changes build on the one before.
        self._write_lock = threading.RLock()
        self._worker: threading.Thread | None = None  # the latest long command's thread
        self._workers: list[threading.Thread] = []  # every long command's thread: a load's goes on after its answer
        self._running: tuple[int, str] | None = None  # the long command in progress: (id, name)
        self._cancel = CancelToken()  # the running command's; `cancel` sets it
        self._stop = threading.Event()
        self._seq = 0
        self._sent: dict[str, Any] = {}  # the results' data as the last state sent carried them
        self._status = "ok"
        self._reason = "the client asked"
        self.hello_extra: dict[str, str] = {}  # more for the hello (a detached run names its run and folders)

    # -- the stream ----------------------------------------------------------------------------
    def send(self, message: Message) -> None:
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
        self.send(Hello(protocol=PROTOCOL_VERSION, planner=__version__, pid=os.getpid(), hardware=hardware,
                        **self.hello_extra))

    def state(self) -> State:
        """The session as the client mirrors it, its results as what changed since the last state made."""
        session = self.session
        data = to_data(session.results)
        given = session.given
        with self._write_lock:
            self._seq += 1
            changed = {key: value for key, value in data.items() if key not in self._sent or self._sent[key] != value}
            removed = tuple(key for key in self._sent if key not in data)
            self._sent = data
            return State(seq=self._seq, changed=changed, removed=removed, discards=discards_of(session),
                         done=tuple(sorted(str(s) for s in session.done_steps())),
                         stale=tuple(sorted(str(s) for s in session.stale_steps())),
                         out_dir=str(session.out_dir) if session.out_dir else None, replies=dict(session.replies),
                         running=self._running[1] if self._running else "",
                         val_data=str(given.val_data) if given.val_data else None, val_preset=given.val_preset,
                         output_kinds=given.output_kinds, llm=self.llm)

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
            message = decode_command(line)
        except ProtocolError as exc:
            fix = (f"send one of: {', '.join(COMMANDS)}" if str(exc).startswith("unknown command")
                   else "send one JSON object per line, with a 'type' (see planner.engine.protocol)")
            self._error(exc.command_id, str(exc), fix)
            return
        if isinstance(message, Cancel):
            self.cancel(now=message.now)
        elif isinstance(message, Shutdown):
            self._hang_up(message.reason or "the client asked", status="ok")
        elif isinstance(message, Command):
            command = message
            if command.at_once:
                self._quick(command, lambda: self._perform(command))
            else:
                self._start(command, lambda: self._perform(command))

    def _quick(self, command: Command, call: Callable[[], Any]) -> None:
        """Answer an at-once command on the reading thread; while a long one runs, its events stay the long one's."""
        self._answer(command.id, command.name, call, own_events=self._running is None)

    def _start(self, command: Command, call: Callable[[], Any]) -> None:
        """Run a long command on the worker thread; one at a time, as the measurements must not compete."""
        command_id, name = command.id, command.name
        running = self._running
        if running is not None:
            self._error(command_id, f"busy: {running[1]} is still running", "wait for it, or send cancel")
            return
        if command.fresh_cancel:
            self.session.cancel = CancelToken()
        self._cancel = self.session.cancel
        self._running = (command_id, name)
        if not command.loads_model:
            resume_gc()  # a plan or a profile runs with collection as usual

        def work() -> None:
            try:
                self._answer(command_id, name, call)
            finally:  # answered already, unless it failed outside a step's errors
                if self._running is not None and self._running[0] == command_id:
                    self._running = None
                reap_finished_processes()

        # After a load has answered, not before: the first collection then scans all the start-up's objects
        # (about 0.2 s), which the answer should not wait for.
        target = _resuming_gc_after(work) if command.loads_model else work
        self._worker = threading.Thread(target=target, name=f"engine-{name}", daemon=True)
        self._workers = [w for w in self._workers if w.is_alive()] + [self._worker]
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
        with self._write_lock:
            self.send(Result(id=command_id, value=_value(value), state=self._answered(command_id)))

    def _error(self, command_id: int, problem: str, fix: str, *, kind: str = "ProtocolError") -> None:
        with self._write_lock:
            self.send(Error(id=command_id, problem=problem, fix=fix, kind=kind, state=self._answered(command_id)))

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
        deadline = time.monotonic() + STOP_WAIT_S
        for worker in self._workers:  # a load's thread resumes garbage collection after its answer has gone out
            worker.join(max(0.0, deadline - time.monotonic()))
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
        self.send(Bye(status=self._status, reason=self._reason,
                      out_dir=str(self.session.out_dir) if self.session.out_dir else None))

    @property
    def stopped(self) -> bool:
        """Whether the engine has stopped reading commands (shutdown, a hang-up or a signal)."""
        return self._stop.is_set()

    @property
    def working(self) -> bool:
        """Whether a command's thread still runs (one that would not stop in time)."""
        return any(w.is_alive() for w in self._workers)

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
    def _perform(self, command: Command) -> Any:
        """Run one command on the session (dispatched on its type); returns what its `Result` carries."""
        session = self.session
        match command:
            case wire.Open():
                return self._open(command)
            case wire.Detect():
                return session.detect()
            case wire.Energy():
                return self._energy()
            case wire.MeasureCeilings(quick=quick, refresh=refresh):
                return session.measure_ceilings(quick=quick, refresh=refresh)
            case wire.Demos():
                from planner.models.demo import DEMOS

                return [(f"demo:{d.name} — {d.summary}", f"demo:{d.name}") for d in DEMOS.values()]
            case wire.Catalog():
                from planner.plugins import catalog

                return catalog()
            case wire.Load():
                return self._load(command)
            case wire.SetTarget(target=target):
                return session.set_target(target)
            case wire.SetRequirements():
                return session.set_requirements(toml_path=Path(command.toml_path) if command.toml_path else None,
                                                overrides=command.overrides, device_class=command.device_class)
            case wire.SetOutDir(out=out):
                return str(session.set_out_dir(Path(out) if out else None))
            case wire.Profile(quick=quick, timeout_s=timeout_s, val_data=val_data):
                if val_data:  # only when given: a session may take no validation data
                    return session.profile(quick=quick, timeout_s=timeout_s, val_data=Path(val_data))
                return session.profile(quick=quick, timeout_s=timeout_s)
            case wire.Decide(replies=replies):
                session.decide(replies=replies)
                return None
            case wire.Plugins():
                return session.plugin_status()
            case wire.Optimize():
                return self._optimize(command)
            case wire.Deploy():
                return session.deploy()
            case wire.Verify():
                return self._verify()
            case wire.Finish(status=status, write_report=write_report):
                return _finished(session.finish(status=status, write_report=write_report))
            case wire.Save():
                session.save()
                return None
            case wire.RunPlan(options=options):
                return self._plan(options)
            case wire.PlanLlm():
                return self._plan_llm(command)
        raise PlannerError(f"the engine has no step for {command.name!r}", "update the planner on both sides")

    def _open(self, command: wire.Open) -> Any:
        """A fresh session from the `open` command's settings; returns the model's description, if one was named."""
        self.session = self.session_factory()
        self.session.cancel = self._cancel
        self.session.on_event = lambda event: self.send(event_message(command.id, event))
        self.llm = None
        session = self.session
        session.detect()
        if command.target:
            session.set_target(command.target)
        if command.requirements or command.requirements_file:
            toml = command.requirements_file
            session.set_requirements(toml_path=Path(toml) if toml else None, overrides=dict(command.requirements or {}))
        described = None
        if command.model:
            described = self._load(wire.Load(source=command.model, input_shape=command.input_shape,
                                             inputs=command.inputs, trust_code=command.trust_code,
                                             val_data=command.val_data, val_preset=command.val_preset,
                                             output_kinds=command.output_kinds))
        if command.out:
            session.set_out_dir(Path(command.out))
        return described

    def _energy(self) -> list[tuple[str, str]]:
        """Each kind of work's energy counter, or why there is none, as labelled lines."""
        from planner.hardware.energy.find import describe

        return [("Energy" if device == "cpu" else "Energy (GPU)", describe(found))
                for device, found in self.session.energy_counters().items()]

    def _load(self, command: wire.Load) -> Any:
        """Load as `planner plan` does, from the plan options of the command's fields; a causal-LM folder is held
        as its facts instead (planner.engine.llm: the inputs, validation data and output kinds do not apply)."""
        from planner.engine.llm import hold_llm, is_llm_source
        from planner.pipeline import PlanOptions
        from planner.pipeline.run import load_with_options

        if is_llm_source(command.source):
            self.llm = hold_llm(self.session, command.source)
            return self.llm
        options = PlanOptions(model=command.source, input_shape=command.input_shape,
                              inputs=tuple(command.inputs or ()), trust_code=command.trust_code,
                              val_data=Path(command.val_data) if command.val_data else None,
                              val_preset=command.val_preset or None, output_kinds=tuple(command.output_kinds or ()))
        described = load_with_options(self.session, options).describe()
        self.llm = None  # the model takes the LLM's place
        return described

    def _plan_llm(self, command: wire.PlanLlm) -> wire.LlmPlanned:
        """The loaded LLM folder's plan, in one run, stopped by `cancel` after the candidate being measured."""
        from planner.engine.llm import plan_llm

        if self.llm is None:
            raise PlannerError("no decoder LLM folder is loaded", "load a folder that holds a causal language model "
                               "(config.json with a *ForCausalLM architecture, its weights and tokenizer) first")
        self.llm, planned = plan_llm(self.llm, command, on_event=self.session.on_event, cancel=self._cancel,
                                     planner=self.llm_planner)
        return planned

    def _optimize(self, command: wire.Optimize) -> int:
        kwargs: dict[str, Any] = {"plugins": command.plugins, "timeout_s": command.timeout_s}
        if command.plugin_options:
            kwargs["plugin_options"] = command.plugin_options
        if command.confirm is not None:
            kwargs["confirm"] = command.confirm
        return len(self.session.optimize(**kwargs)) - 1

    def _verify(self) -> wire.Verified:
        """Check the hand-over packages written under deploy/ (files, runtime, fidelity, latency), each in turn."""
        from planner.deploy import DEPLOY_DIR, verify_path

        out_dir = self.session.out_dir
        root = out_dir / DEPLOY_DIR if out_dir is not None else None
        written = [d for d in self.session.results.deployments if d.folder]
        verdicts = verify_path(root) if written and root is not None else []
        return wire.Verified(root=str(root) if root else None, verdicts=tuple(
            wire.PackageVerdict(folder=str(v.folder), label=v.label, passed=v.passed,
                                checks=tuple(wire.CheckLine(name=c.name, passed=c.passed, detail=c.detail)
                                             for c in v.checks))
            for v in verdicts))

    def _plan(self, options: dict[str, Any]) -> wire.Finished:
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
            self.llm = None  # the plan's session holds its own model
        return _finished(outcome)


def discards_of(session: PlanSession) -> dict[str, tuple[str, ...]]:
    """Per change, the steps holding a result (up to date or stale) that the change would discard."""
    from planner.pipeline.steps import Change, Fate, invalidated_by

    held = session.done_steps() | session.stale_steps()
    return {str(change): tuple(str(step) for step, fate in invalidated_by(change).items()
                               if fate is Fate.DISCARDED and step in held) for change in Change}


def _finished(outcome: PlanOutcome) -> wire.Finished:
    """Where a finished plan went, as `Finish` and `RunPlan` answer it."""
    assert outcome.results is not None  # a plan here always holds its results
    return wire.Finished(out_dir=str(outcome.out_dir), status=str(outcome.results.status),
                         report_path=str(outcome.report_path) if outcome.report_path else None)


def _value(value: Any) -> Any:
    """A step's return value as the `result` carries it: plain data, through the codec."""
    return to_data(value)


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


def reap_finished_processes() -> None:
    """Collect the exit of each process the engine started that has ended: multiprocessing keeps a finished
    process (a library's, a measuring one) with its pipe until asked, and a job's end is when to ask."""
    multiprocessing.active_children()


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
    # The commands come in on a private copy of stdin too, and fd 0 becomes /dev/null. A multiprocessing child forked
    # from the engine closes sys.stdin as it starts; were the engine's reading thread blocked in sys.stdin's readline,
    # the fork would inherit that lock held and hang in the close forever, holding gigabytes. The libraries' processes
    # come from a forkserver (start_processes_from_a_server); this guards against code that asks for "fork" by name.
    command_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    reader = os.fdopen(command_fd, "r", encoding="utf-8")
    return serve_streams(reader, writer, session_factory=session_factory)


def serve_streams(reader: IO[str], writer: IO[str], *, session_factory: SessionFactory = PlanSession,
                  hello_extra: dict[str, Any] | None = None,
                  on_start: Callable[[EngineServer], None] | None = None, hangup_signals: bool = True) -> int:
    """Serve one engine on `reader`/`writer` in this process (stdio, or a detached run's FIFO and log) with its
    signal handling; `on_start` runs on a thread beside it. Returns 0 when it ended cleanly."""
    pause_gc()  # until the first model load has ended (planner.engine.startup)
    limit_cpus()
    start_processes_from_a_server()
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
    if server.working:
        # A step that would not stop in time still runs on its thread, often in native code: finalizing the
        # interpreter under it aborts the process (SIGABRT). Its results are written and the goodbye sent: leave now.
        sys.stderr.flush()
        os._exit(code)
    return code
