"""One plan on one host over SSH: connect, check the host, ship the model, run the plan on a detached engine,
fetch what it wrote. Also `attach` (the same run after a dropped connection) and the engine the TUI drives.

Files go over SFTP, or as a tar stream over the command channel where the host's SSH server has no SFTP subsystem
(`planner.ssh.transfer`); the progress lines say which, and so does remote-run.json (`transfer`).

Every remote step is a coroutine on the process's SSH loop (`planner.ssh.channel`); the plan itself is driven
through `EngineClient` exactly as `planner plan --engine subprocess` drives a local engine. The local folder of
a host's run holds what the remote's `out/` held, plus `remote-run.json` (which host and run it came from), so
`planner attach` can find it again, and how its files came (`transfer`: "sftp" or "tar").
"""

from __future__ import annotations

import json
import shlex
import threading
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import asyncssh

from planner.engine.client import EngineClient, EngineDiedError
from planner.engine.plan_options import options_data
from planner.engine.protocol import Answer, Error, Result, RunPlan, Shutdown
from planner.engine.waiting import await_answer
from planner.errors import PlannerError
from planner.events import Event, EventSink, null_sink
from planner.io import write_json_atomic
from planner.models.source import SourceKind, parse_source
from planner.pipeline.options import Carry, PlanOptions, carried
from planner.pipeline.outcome import PlanOutcome
from planner.results import RESULTS_NAME, read_results
from planner.ssh.channel import RemoteProcess, ssh_loop
from planner.ssh.connect import open_connection
from planner.ssh.hosts import HostSpec, SshOptions
from planner.ssh.preflight import RemoteFacts, preflight, remote_command
from planner.ssh.transfer import SFTP, WAY_WORDS, fetch, ship, transfer_way

REMOTE_RUN = "remote-run.json"
"""The file in a host's local folder that names the host and the run its files came from."""

CANCEL_WAIT_S = 60.0
"""How long a cancelled remote plan may take to stop and write what it measured before the client gives up."""

PhaseSink = Callable[[str, str], None]
"""Told each phase of a host's run (connecting, checking, shipping, planning, fetching, done, failed) and a detail."""


class ConnectionLostError(PlannerError):
    """The SSH connection dropped while the remote plan ran; the plan goes on there and `attach` fetches it."""

    def __init__(self, problem: str, fix: str, *, run: str, local_dir: Path) -> None:
        super().__init__(problem, fix)
        self.run = run
        self.local_dir = local_dir


@dataclass(kw_only=True)
class HostOutcome(PlanOutcome):
    """How one host's plan ended: a plan's outcome (its folder fetched here), with the host and the run it was."""

    spec: HostSpec
    run: str = ""
    facts: RemoteFacts | None = None

    @property
    def name(self) -> str:
        """The host's label."""
        return self.spec.label

    @property
    def where(self) -> str:
        """'Fetched from box (run 20261128-...) into out/box' ('' before anything was fetched)."""
        if self.out_dir is None:
            return ""
        return f"Fetched from {self.spec.label} (run {self.run}) into {self.out_dir}"


def _unsupported(options: PlanOptions) -> None:
    """Options that name local files the remote cannot see and that are not shipped yet: say so before connecting."""
    from planner.models.llm import is_model_folder

    if is_model_folder(options.model):
        raise PlannerError(f"{options.model} is a model folder (a decoder LLM's), which is not carried to a remote "
                           "host yet",
                           f"copy the folder to the host and run `planner plan --model {Path(options.model).name}` "
                           "there")
    for name, flag in carried(Carry.REFUSED):
        if getattr(options, name):
            raise PlannerError(f"{flag.names[0]} is not carried to a remote host yet",
                               f"copy the files to the host and run `planner plan {flag.names[0]} ...` there, or "
                               "leave it out")


class HostConnection:
    """An open SSH connection to one host, with what its preflight found."""

    def __init__(self, spec: HostSpec, ssh: SshOptions) -> None:
        self.spec = spec
        self.ssh = ssh
        self.loop = ssh_loop()
        self.conn: asyncssh.SSHClientConnection | None = None
        self.facts: RemoteFacts | None = None
        self.transfer: str | None = None  # how files went to and from the host (SFTP or TAR); None before any did

    def open(self, on_phase: PhaseSink | None = None) -> RemoteFacts:
        """Connect (host key and login checked) and run the preflight; PlannerError says what is wrong."""
        say = on_phase or (lambda _phase, _detail: None)
        say("connecting", f"connecting to {self.spec.label}")
        self.conn = self.loop.run(open_connection(self.spec, self.ssh))
        say("checking", "checking the planner on the host")
        self.facts = self.loop.run(preflight(self.conn, self.spec))
        return self.facts

    def ship(self, local: Path) -> tuple[str, bool]:
        """Put a local file into the host's cache (not sent again when it is there); its remote path, and whether
        it was sent."""
        assert self.conn is not None and self.facts is not None
        shipped = self.loop.run(ship(self.conn, local, self.facts.cache_dir, host=self.spec.label))
        self.transfer = shipped.way
        return shipped.remote_path, shipped.sent

    def transfer_way(self) -> str:
        """How files go to and from the host: SFTP, or TAR where its SSH server has no SFTP subsystem (found once
        per connection)."""
        assert self.conn is not None
        self.transfer = self.loop.run(transfer_way(self.conn, host=self.spec.label))
        return self.transfer

    def engine(self, *args: str, on_death: Callable[[EngineDiedError], None] | None = None) -> RemoteEngineClient:
        """Start `planner engine ARGS` on the host and shake hands with it."""
        assert self.conn is not None
        process = RemoteProcess(self.conn, remote_command(self.spec, "engine", *args), host=self.spec.label,
                                loop=self.loop)
        client = RemoteEngineClient(process, self, on_death=on_death)
        try:
            client.connect()
        except PlannerError as exc:
            process.close()
            from planner.engine.detached import NO_RUN

            runs = f"`ssh {self.spec.host} {remote_command(self.spec, 'engine', '--runs')}` lists its runs"
            if process.exit_status == NO_RUN:
                raise PlannerError(f"{self.spec.label} has no run {args[1]!r}" if len(args) > 1 else exc.problem,
                                   f"{runs}; `{attach_command(self.spec)}` takes the newest") from exc
            raise PlannerError(exc.problem, f"run `{remote_command(self.spec, 'preflight')}` on {self.spec.label} "
                                            "to see what is wrong there") from exc
        return client

    def fetch(self, remote_dir: str, local_dir: Path) -> dict[str, str]:
        """Copy the run's folder back into `local_dir`; returns the remote files left out, and why."""
        assert self.conn is not None
        fetched = self.loop.run(fetch(self.conn, remote_dir, local_dir, host=self.spec.label))
        self.transfer = fetched.way
        return fetched.skipped

    def close(self) -> None:
        """Close the connection (a detached engine on the host goes on)."""
        conn, self.conn = self.conn, None
        if conn is None:
            return

        async def closing() -> None:
            conn.close()
            await conn.wait_closed()

        try:
            self.loop.run(closing(), timeout=5)
        except Exception:  # noqa: BLE001, S110 - a dropped connection has nothing to close
            pass


class RemoteEngineClient(EngineClient):
    """An `EngineClient` whose engine runs on a host: the channel it speaks over, and the connection that carries it
    (kept as long as the client)."""

    def __init__(self, channel: RemoteProcess, connection: HostConnection, *,
                 on_death: Callable[[EngineDiedError], None] | None = None) -> None:
        super().__init__(channel.reader, channel.writer,  # type: ignore[arg-type]  # a text writer, not a file
                         on_death=on_death, exit_problem=channel.problem)
        self.channel = channel
        self.connection = connection

    @property
    def connection_lost(self) -> bool:
        """Whether the stream ended because the SSH connection dropped (not because the engine ended)."""
        return bool(self.channel.lost)

    def leave(self, *, shutdown: bool = True) -> None:
        """Say goodbye to the engine (`shutdown` ends it; without, it goes on detached) and close the channel."""
        if shutdown:
            self.send(Shutdown())
        self.channel.close()


def attach_command(spec: HostSpec, run: str = "") -> str:
    """The command that re-attaches to `run` on `spec` (the newest run without one), as the user would type it."""
    words = ["planner", "attach", spec.target] + ([run] if run else [])
    if spec.planner != "planner":
        words += ["--remote-planner", spec.planner]
    return shlex.join(words)


def default_local_dir(spec: HostSpec, run: str, base: Path | None = None) -> Path:
    """Where a host's run lands here by default: reports/<host>-<run> (named after the host, one per run)."""
    return (base or Path("reports")) / f"{spec.folder_name}-{run}"


def _remote_options(options: PlanOptions, host: HostConnection, on_phase: PhaseSink) -> PlanOptions:
    """`options` as the host must see them: local files shipped into its cache, the output in the run's folder."""
    changes: dict[str, Any] = {name: None for name, _ in carried(Carry.HOST_OUT)}
    for name, _ in carried(Carry.MODEL):
        changes[name] = model_on_host(getattr(options, name), host, on_phase)
    for name, _ in carried(Carry.SHIP):
        local = getattr(options, name)
        if local is not None:
            remote, _sent = host.ship(local)
            changes[name] = Path(remote)
    return replace(options, **changes)


def model_on_host(model: str, host: HostConnection, on_phase: PhaseSink | None = None) -> str:
    """The model source as the host sees it: a local file is shipped into its cache (not again when it is there);
    demos and torchvision names need nothing."""
    source = parse_source(model)
    if source.kind in (SourceKind.DEMO, SourceKind.TORCHVISION):
        return model
    if not source.path.is_file():
        raise PlannerError(f"the model file {source.path} does not exist here",
                           "give the path of a model file on this machine")
    say = on_phase or (lambda _phase, _detail: None)
    say("shipping", f"sending {source.path.name}")
    remote, sent = host.ship(source.path)
    how = f"sent {WAY_WORDS[host.transfer or SFTP]}" if sent else "already on the host"
    say("shipping", f"{source.path.name} {how}")
    return f"{remote}:{source.factory}" if source.kind is SourceKind.PYTHON else remote


def run_plan_on_host(spec: HostSpec, options: PlanOptions, *, ssh: SshOptions, local_dir: Path | None = None,
                     base_dir: Path | None = None, on_event: EventSink = null_sink, on_phase: PhaseSink | None = None,
                     cancel: threading.Event | None = None) -> HostOutcome:
    """Plan `options` on `spec` and fetch its folder. Raises PlannerError when the host cannot plan (unreachable,
    no planner, ...), ConnectionLostError when the connection drops mid-plan, and KeyboardInterrupt after a Ctrl-C
    (or `cancel`) has stopped the remote plan and what it measured was fetched (`outcome` on the exception)."""
    _unsupported(options)
    say = on_phase or (lambda _phase, _detail: None)
    host = HostConnection(spec, ssh)
    try:
        facts = host.open(say)
        remote_options = _remote_options(options, host, say)
        say("starting", "starting the engine on the host")
        client = host.engine("--detach")
        run, out = client.hello.run, client.hello.out
        local = local_dir or default_local_dir(spec, run, base_dir)
        _note_run(local, spec, run, out, transfer=host.transfer)
        say("planning", f"run {run}")
        remote_options = replace(remote_options, out=Path(out))
        outcome = HostOutcome(results=None, out_dir=local, spec=spec, run=run, facts=facts)
        plan = RunPlan(options=options_data(remote_options))
        reply, interrupted = _await_cancelling(
            client, lambda: Result(value=client.request(plan, on_event=on_event)), on_event=on_event, cancel=cancel)

        def lost(problem: str) -> ConnectionLostError:
            _note_run(local, spec, run, out, seen=client.received, transfer=host.transfer)  # attach replays from there
            return ConnectionLostError(f"{problem}; the plan goes on on {spec.label} as run {run}",
                                       f"{attach_command(spec, run)}  (fetches it into {local})",
                                       run=run, local_dir=local)

        _conclude(client, reply, outcome, lost)
        _fetch_into(host, out, outcome, say)
        if reply is not None and interrupted:
            outcome.interrupted = True
            raise _Interrupted(outcome)
        say("done" if not outcome.failure else "failed", outcome.failure or _headline(outcome))
        return outcome
    finally:
        host.close()


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C (or a fleet's cancel) stopped the remote plan; what it measured was fetched into `outcome`."""

    def __init__(self, outcome: HostOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def _await_cancelling(client: EngineClient, wait: Callable[[], Answer | None], *, on_event: EventSink,
                      cancel: threading.Event | None = None) -> tuple[Answer | None, bool]:
    """Wait for the answer `wait` returns (the plan's, or a re-attached run's); Ctrl-C or `cancel` cancels the run on
    the host and waits on for what it kept. Returns the answer (None when the stream ended first: the client's
    `death` says why) and whether it was interrupted."""
    def stop() -> None:
        on_event(Event(kind="warning", message="cancelling the plan on the host; fetching what it measured"))
        client.cancel(now=True)

    return await_answer(wait, on_interrupt=stop, cancel=cancel)


def _conclude(client: RemoteEngineClient, reply: Answer | None, outcome: HostOutcome,
              lost: Callable[[str], ConnectionLostError]) -> None:
    """Close the channel and note in `outcome` how the run ended; a dropped connection raises `lost(problem)` (the
    engine goes on there, for `attach`)."""
    if reply is None:
        problem = client.death.problem if client.death is not None else ""
        client.leave(shutdown=False)
        if client.connection_lost:
            raise lost(problem or "the connection was lost")
        outcome.failure = problem or "the remote engine stopped"
        return
    client.leave()
    if isinstance(reply, Error):
        outcome.failure = reply.problem or "the plan failed"


def _fetch_into(host: HostConnection, remote_out: str, outcome: HostOutcome, say: PhaseSink) -> None:
    """Fetch the run's folder and read its results (a run that wrote none leaves `results` None)."""
    assert outcome.out_dir is not None
    try:
        say("fetching", f"fetching into {outcome.out_dir} {WAY_WORDS[host.transfer_way()]}")
        outcome.skipped = host.fetch(remote_out, outcome.out_dir)
    except PlannerError as exc:
        outcome.failure = outcome.failure or f"fetching the results failed: {exc.problem}"
        return
    finally:
        # The fetch replaced the folder.
        _note_run(outcome.out_dir, outcome.spec, outcome.run, remote_out, transfer=host.transfer)
    results_path = outcome.out_dir / RESULTS_NAME
    if results_path.is_file():
        try:
            outcome.results = read_results(results_path)
        except (PlannerError, ValueError, OSError) as exc:
            outcome.failure = outcome.failure or f"the fetched results.json does not read: {exc}"
    report = outcome.out_dir / "report.md"
    outcome.report_path = report if report.is_file() else None


def _note_run(local_dir: Path, spec: HostSpec, run: str, remote_out: str, *, seen: int | None = None,
              transfer: str | None = None) -> None:
    """Write remote-run.json: which host and run the folder is for, (`seen`) how many of the run's messages this
    client heard before its connection dropped, and (`transfer`) how files went to and from the host: "sftp", or
    "tar" where it has no SFTP subsystem (None while none has gone yet)."""
    local_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(local_dir / REMOTE_RUN, {"host": spec.host, "user": spec.user, "port": spec.port,
                                               "label": spec.label, "planner": spec.planner, "run": run,
                                               "remote_out": remote_out, "seen": seen, "transfer": transfer,
                                               "noted": datetime.now(timezone.utc).isoformat()})


def _headline(outcome: HostOutcome) -> str:
    results = outcome.results
    if results is None:
        return "no results"
    return f"{results.status.value}: {outcome.out_dir}"


def attach_host(spec: HostSpec, run: str = "latest", *, ssh: SshOptions, local_dir: Path | None = None,
                base_dir: Path | None = None, on_event: EventSink = null_sink,
                on_phase: PhaseSink | None = None) -> HostOutcome:
    """Re-attach to a detached run on `spec`: replay its messages, wait for its plan to end, fetch its folder.
    A run whose engine is gone (killed, or the host rebooted) is fetched as it was left, with why."""
    say = on_phase or (lambda _phase, _detail: None)
    host = HostConnection(spec, ssh)
    try:
        facts = host.open(say)
        since = _seen_before(local_dir or default_local_dir(spec, run, base_dir), run) if run != "latest" else 1
        say("attaching", f"attaching to run {run}" + (f", replaying from message {since} (the first one not seen "
                                                        "before the connection dropped)" if since > 1 else ""))
        client = host.engine("--attach", run, "--since", str(since))
        run, out = client.hello.run or run, client.hello.out
        local = local_dir or default_local_dir(spec, run, base_dir)
        outcome = HostOutcome(results=None, out_dir=local, spec=spec, run=run, facts=facts)
        client.running = "plan"  # what a death report says was running: the run's plan, which the replay follows
        reply, _ = _await_cancelling(client, lambda: client.follow(on_event=on_event), on_event=on_event)
        _conclude(client, reply, outcome,
                  lambda problem: ConnectionLostError(problem, attach_command(spec, run), run=run, local_dir=local))
        _fetch_into(host, out, outcome, say)
        say("done" if not outcome.failure else "failed", outcome.failure or _headline(outcome))
        return outcome
    finally:
        host.close()


def _seen_before(local_dir: Path, run: str) -> int:
    """How many of `run`'s messages the client heard before its connection dropped (1: just the hello)."""
    noted = read_remote_run(local_dir)
    seen = noted.get("seen") if noted is not None and noted.get("run") == run else None
    return seen if isinstance(seen, int) and seen > 1 else 1


def read_remote_run(local_dir: Path) -> dict[str, Any] | None:
    """The host and run a local folder came from (its remote-run.json), or None."""
    try:
        return dict(json.loads((local_dir / REMOTE_RUN).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
