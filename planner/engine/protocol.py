"""The engine protocol: how a client (the TUI, `planner plan --engine subprocess`, an SSH run) drives `planner engine`.

The engine reads commands from its stdin and writes messages to its stdout, one JSON object per line. Every
command and message is a typed value below (a msgspec Struct); its `type` field names which, so a line decodes
straight into its class, and the engine dispatches on that class. Nothing else ever reaches the engine's stream:
it sends whatever a library prints to stderr (see `planner.engine.server`).

The engine speaks first, with a `Hello`; then each command the client sends carries an `id`, and everything the
engine sends about that command carries the same `id`: progress (`EventMessage`) while it runs, then exactly one
`Result` or `Error`. Each answer carries the session's `State` after the command, so the client never keeps step
rules of its own. A state carries the results (`PlanResults`, as results.json holds them) as what changed since
the state before it: the top-level fields whose data differ (`changed`) and those gone (`removed`). The engine
sends states in the order it makes them, so a client that applies them as it reads them holds the whole results.

Client → engine: `Open` (a fresh session from a model, target, requirements and folder), one command per
session step (`Detect` … `Save`; `RunPlan` runs the whole method as `planner plan` does), `PlanLlm` (a decoder
LLM folder's plan, in one run: `Load` of such a folder answers its facts, an `LlmFolder`, instead of a model's
description), `Cancel` (at the next safe point, or `now`: by ending the measuring process) and `Shutdown`.

Engine → client: `Hello` (protocol and planner versions, the engine's pid, the host's hardware; a detached
engine adds its run and folders), `EventMessage`, `Result`, `Error` (the problem, the fix, the error's kind) and
`Bye` (the engine is exiting: its final status and why).

An example exchange (`>` client to engine, `<` engine to client; values shortened)::

    < {"type": "hello", "protocol": 4, "planner": "0.1.0", "pid": 4242, "hardware": {"cpu": {...}, ...}}
    > {"type": "open", "id": 1, "model": "demo:tiny", "target": "cpu", "out": "reports/tiny"}
    < {"type": "result", "id": 1, "value": {"source": "demo:tiny", "name": "tiny", "parameters": 1578, ...},
       "state": {"seq": 1, "done": ["model", "target"], "changed": {"model": {...}, ...}, ...}}
    > {"type": "profile", "id": 2, "quick": true}
    < {"type": "event", "id": 2, "event": {"kind": "stage", "message": "timing the baseline: ...", ...}}
    > {"type": "cancel", "now": true}
    < {"type": "error", "id": 2, "problem": "profile was cancelled before it finished (...)",
       "fix": "run profile again to measure it", "kind": "Cancelled", "state": {...}}
    > {"type": "nonsense", "id": 3}
    < {"type": "error", "id": 3, "problem": "unknown command 'nonsense'", "fix": "send one of: open, ...", ...}
    > {"type": "shutdown"}
    < {"type": "bye", "status": "ok", "reason": "the client asked", "out_dir": "reports/tiny"}

A line that is not JSON, or not a command the engine knows, gets an `Error` (with the command's `id` when it
had one, else 0) and the engine keeps going. A client that reads a hello with another protocol version stops
with an error naming both versions.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Union

import msgspec

from planner.codec import to_data
from planner.events import Event
from planner.plugins.options import PluginOptions

PROTOCOL_VERSION = 4
"""Raised whenever a message changes in a way an older client or engine would misread (2: typed commands, one per
step, and states that carry what changed; 3: a model loads with its validation data and output kind, which an
older engine would drop without a word; 4: a decoder LLM folder loads as its facts, which an older client would
read as a model's description, and `llm_plan` plans it)."""


class ProtocolError(ValueError):
    """A line that is not a message of this protocol (not JSON, not an object, no known `type`); `command_id` is
    the id the line carried, when it had one."""

    def __init__(self, message: str, command_id: int = 0) -> None:
        super().__init__(message)
        self.command_id = command_id


class Message(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True):
    """One line of the protocol; its class's tag is the line's `type`."""


# -- client → engine ---------------------------------------------------------------------------------------------


class Command(Message):
    """A command that gets an answer. How the engine runs it is declared here, by its class:

    `at_once`: it takes milliseconds, so the engine answers it even while a long command runs (the TUI re-plans
    when the requirements change during an optimize); `fresh_cancel`: it starts with a fresh cancel flag (the
    others keep the last run's, which `Finish` reads, so a cancelled optimize saved afterwards is saved as
    interrupted); `loads_model`: the start-up's pause of garbage collection ends when it ends.
    """

    id: int = 0
    at_once: ClassVar[bool] = False
    fresh_cancel: ClassVar[bool] = False
    loads_model: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The command's name on the wire (its `type`), as errors and logs say it."""
        return str(type(self).__struct_config__.tag)


class Open(Command, tag="open"):
    """A fresh session, set up from a model (with what `Load` takes), a target, requirement overrides
    (``{"latency_ms": 5}``), a requirements file and an output folder; answers the model's description, when one
    was named."""

    model: str | None = None
    input_shape: str | None = None
    inputs: list[str] | None = None
    trust_code: bool = False
    val_data: str | None = None
    val_preset: str | None = None
    output_kinds: list[str] | None = None
    target: str | None = None
    requirements: dict[str, Any] | None = None
    requirements_file: str | None = None
    out: str | None = None
    fresh_cancel: ClassVar[bool] = True
    loads_model: ClassVar[bool] = True


class Detect(Command, tag="detect"):
    """The host's hardware, detected."""

    at_once: ClassVar[bool] = True


class Energy(Command, tag="energy"):
    """Each kind of work's energy counter, or why there is none, as (label, text) rows."""

    at_once: ClassVar[bool] = True


class MeasureCeilings(Command, tag="ceilings"):
    """Measure the roofline ceilings (or read the cached ones)."""

    quick: bool = False
    refresh: bool = False


class Demos(Command, tag="demos"):
    """The built-in demo models, as (label, source) pairs."""

    at_once: ClassVar[bool] = True


class Catalog(Command, tag="catalog"):
    """What every registered plugin declares."""

    at_once: ClassVar[bool] = True


class Load(Command, tag="load", kw_only=True):
    """Load and check a model, with the validation data and output kind it is judged on; answers its description.

    The fields are `planner plan`'s options of the same names (planner.pipeline.options: `source` is `model`,
    `output_kinds` the `--output-kind NAME=KIND` specs); the engine loads with them as `planner plan` does
    (planner.pipeline.run.load_with_options), so a folder that is not one or a kind that does not parse is this
    command's error, and the profile and the candidates use them.
    """

    source: str
    input_shape: str | None = None
    inputs: list[str] | None = None
    trust_code: bool = False
    val_data: str | None = None
    val_preset: str | None = None
    output_kinds: list[str] | None = None
    loads_model: ClassVar[bool] = True


class SetTarget(Command, tag="target"):
    """Resolve and record the deployment target."""

    target: str = "auto"
    at_once: ClassVar[bool] = True


class SetRequirements(Command, tag="requirements"):
    """Set the requirements: overrides, then a TOML file, then the device class's defaults."""

    toml_path: str | None = None
    overrides: dict[str, Any] | None = None
    device_class: str | None = None
    at_once: ClassVar[bool] = True


class SetOutDir(Command, tag="out_dir"):
    """Choose and check the output folder (a fresh one under reports/ when `out` is None)."""

    out: str | None = None
    at_once: ClassVar[bool] = True


class Profile(Command, tag="profile"):
    """Measure and analyse the baseline."""

    quick: bool = False
    timeout_s: float = 600.0
    val_data: str | None = None
    fresh_cancel: ClassVar[bool] = True


class Decide(Command, tag="decide"):
    """Answer the checklist (with the user's `replies` by question id, when given), walk the tree, make the plan."""

    replies: dict[str, str] | None = None
    at_once: ClassVar[bool] = True


class Plugins(Command, tag="plugins"):
    """Every registered plugin with whether it can run here, and why not."""

    at_once: ClassVar[bool] = True


class Optimize(Command, tag="optimize"):
    """Build, measure, judge and rank the candidates of `plugins` (the plan's when None); answers how many."""

    plugins: list[str] | None = None
    timeout_s: float = 300.0
    plugin_options: PluginOptions | None = None
    confirm: int | None = None
    fresh_cancel: ClassVar[bool] = True


class Deploy(Command, tag="deploy"):
    """Write the hand-over packages and record them."""


class Verify(Command, tag="verify"):
    """Check the packages `Deploy` wrote (files, runtime, fidelity, latency); answers a `Verified`."""


class Finish(Command, tag="finish"):
    """Rank, check the requirements, write results.json and the report; answers a `Finished`."""

    status: str | None = None
    write_report: bool = True


class Save(Command, tag="save"):
    """Write results.json, if an output folder is set."""

    at_once: ClassVar[bool] = True


class RunPlan(Command, tag="plan"):
    """The whole method, as `planner plan` runs it (`options`: the plan options' data,
    planner.engine.plan_options); the session becomes the plan's own. Answers a `Finished`."""

    options: dict[str, Any] = msgspec.field(default_factory=dict)
    fresh_cancel: ClassVar[bool] = True


class PlanLlm(Command, tag="llm_plan", kw_only=True):
    """The decoder LLM's plan (planner.llm.plan), on the folder `Load` read: the read roof, each LLM plugin's
    candidates timed token by token and judged against the original, the decision, report.md and the hand-over
    package, in one run (the step graph's profile, checklist and tree do not apply to it). Its events stream as
    any long command's; `cancel` stops it after the candidate being measured, with what was measured written.
    Answers an `LlmPlanned`.

    `out` is the plan's folder (a fresh default one, reports/<date>-<model>-llm, when None; a taken folder is not
    written over: the plan goes beside it, numbered); `plugins` the LLM plugins to run (all registered when empty);
    `gguf` a GGUF file of the model, on the engine's machine, for llama.cpp to measure.
    """

    prompt_lengths: list[int] = msgspec.field(default_factory=lambda: [32, 128, 512])
    new_tokens: int = 64
    quick: bool = True
    budget_s: float | None = None
    out: str | None = None
    plugins: list[str] | None = None
    gguf: str | None = None
    fresh_cancel: ClassVar[bool] = True


class Cancel(Message, tag="cancel"):
    """Stop the running command: at its next safe point, or (`now`) by ending its measuring processes."""

    now: bool = False


class Shutdown(Message, tag="shutdown"):
    """Stop whatever runs, write what was measured, and exit (`reason` goes into the goodbye)."""

    reason: str = ""


ClientMessage = Union[Open, Detect, Energy, MeasureCeilings, Demos, Catalog, Load, SetTarget, SetRequirements,
                      SetOutDir, Profile, Decide, Plugins, Optimize, Deploy, Verify, Finish, Save, RunPlan, PlanLlm,
                      Cancel, Shutdown]
"""Every line a client sends."""

COMMANDS = tuple(str(kind.__struct_config__.tag) for kind in ClientMessage.__args__)  # type: ignore[attr-defined]
"""The `type` of every line a client sends."""


# -- engine → client ---------------------------------------------------------------------------------------------


class LlmFolder(msgspec.Struct, kw_only=True, frozen=True):
    """A decoder LLM folder the engine holds in place of a model: what `Load` answers for a causal-LM folder, and
    what every state carries while it stays loaded (with where its last plan went, once one ran)."""

    source: str  # the folder as it was named
    facts: dict[str, Any]  # planner.models.llm.LlmFacts, as data: layers, heads, KV heads, vocabulary, context...
    kind: str = "decoder-llm"
    plan_dir: str | None = None  # the last plan's folder (results.json, report.md, deploy/)
    report_path: str | None = None  # its report.md, when one was written
    status: str = ""  # how the last plan ended: ok, interrupted, failed; "" before one ran


class State(msgspec.Struct, kw_only=True, frozen=True):
    """The session after a command, as the client mirrors it: nothing else holds step rules."""

    seq: int = 0  # counts up with every state sent, in the order they are sent
    changed: dict[str, Any] = msgspec.field(default_factory=dict)  # the results' top-level fields whose data
    # changed since the state before (all of them in the first), as results.json holds them
    removed: tuple[str, ...] = ()  # the results' top-level fields gone since the state before
    done: tuple[str, ...] = ()  # steps whose result is there and up to date
    stale: tuple[str, ...] = ()  # steps whose result is kept but out of date
    out_dir: str | None = None
    replies: dict[str, str] = msgspec.field(default_factory=dict)  # the user's checklist replies, by question id
    running: str = ""  # the command still running (an at-once command answered during a long one), else ""
    discards: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)  # per change (model, inputs, ...):
    # the steps holding a result that it would throw away, so a client can ask before losing measured work
    val_data: str | None = None  # the validation folder the model was loaded with (`Load`'s), if any
    val_preset: str | None = None  # the preset named for its images, if any
    output_kinds: tuple[str, ...] = ()  # the NAME=KIND specs it was loaded with
    llm: LlmFolder | None = None  # the decoder LLM folder loaded instead of a model (then `model` is in no
    # results), or None


class Hello(Message, tag="hello", kw_only=True):
    """The handshake, the engine's first line. A detached engine (planner.engine.detached) adds its `run`, its
    `run_dir` and the plan's folder `out`."""

    protocol: int
    planner: str = ""
    pid: int = 0
    hardware: Any = None  # the detected HardwareProfile, as results.json holds it (None where detection broke)
    run: str = ""
    run_dir: str = ""
    out: str = ""


class EventData(msgspec.Struct, kw_only=True, frozen=True):
    """A progress event as it travels (planner.events.Event)."""

    kind: str = "log"
    message: str = ""
    stage: str = ""
    index: int | None = None
    total: int | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class EventMessage(Message, tag="event"):
    """Progress of command `id`: a stage, a candidate, a log line or a warning."""

    id: int = 0
    event: EventData = msgspec.field(default_factory=EventData)


class Result(Message, tag="result"):
    """Command `id` ended: its `value` (plain data) and the session's state."""

    id: int = 0
    value: Any = None
    state: State | None = None


class Error(Message, tag="error"):
    """Command `id` failed: the `problem`, the `fix`, the error's `kind` (`Cancelled` when the user stopped it),
    and the session's state."""

    id: int = 0
    problem: str = ""
    fix: str = ""
    kind: str = "ProtocolError"
    state: State | None = None


class Bye(Message, tag="bye"):
    """The engine is exiting: its final `status` (`ok`, `interrupted`), why, and the plan's folder."""

    status: str = "ok"
    reason: str = ""
    out_dir: str | None = None


EngineMessage = Union[Hello, EventMessage, Result, Error, Bye]
"""Every line the engine sends."""

Answer = Union[Result, Error]
"""How a command ends."""

MESSAGES = tuple(str(kind.__struct_config__.tag) for kind in EngineMessage.__args__)  # type: ignore[attr-defined]
"""The `type` of every line the engine sends."""


class CheckLine(msgspec.Struct, kw_only=True, frozen=True):
    """One check of a package (files, runtime, fidelity, latency) and what it found."""

    name: str
    passed: bool
    detail: str = ""


class PackageVerdict(msgspec.Struct, kw_only=True, frozen=True):
    """One package's verdict: its folder, its candidate, whether every check passed, and each check."""

    folder: str
    label: str = ""
    passed: bool = False
    checks: tuple[CheckLine, ...] = ()


class Verified(msgspec.Struct, kw_only=True, frozen=True):
    """What `Verify` answers: the deploy/ folder checked and one verdict per package."""

    root: str | None = None
    verdicts: tuple[PackageVerdict, ...] = ()


class Finished(msgspec.Struct, kw_only=True, frozen=True):
    """What `Finish` and `RunPlan` answer: the plan's folder, its report (None when none was written) and status."""

    out_dir: str
    report_path: str | None = None
    status: str = ""


class LlmPlanned(msgspec.Struct, kw_only=True, frozen=True):
    """What `PlanLlm` answers: the plan's folder, its report (None when none was written), how it ended, and the
    plan itself (planner.llm.results.LlmPlan, as its results.json holds it)."""

    out_dir: str
    report_path: str | None = None
    status: str = ""
    plan: dict[str, Any] = msgspec.field(default_factory=dict)


_ENCODER = msgspec.json.Encoder(enc_hook=str)
_CLIENT_DECODER = msgspec.json.Decoder(ClientMessage)
_ENGINE_DECODER = msgspec.json.Decoder(EngineMessage)


def encode(message: Message) -> str:
    """One message as its line (no newline)."""
    return _ENCODER.encode(message).decode()


def decode_command(line: str) -> Message:
    """One client line as its command; ProtocolError (with the line's id, when it had one) when it is not one."""
    try:
        return _CLIENT_DECODER.decode(line)
    except msgspec.DecodeError as exc:
        raise _not_a_message(line, exc, COMMANDS) from exc


def decode_message(line: str) -> EngineMessage:
    """One engine line as its message; ProtocolError when it is not one (the caller decides whether that is fatal)."""
    try:
        return _ENGINE_DECODER.decode(line)
    except msgspec.DecodeError as exc:
        raise _not_a_message(line, exc, MESSAGES) from exc


def _not_a_message(line: str, exc: msgspec.DecodeError, known: tuple[str, ...]) -> ProtocolError:
    """Why a line is not a message, in words, with the id it carried (so its error can answer that command)."""
    try:
        data = json.loads(line)
    except ValueError as bad:
        return ProtocolError(f"not JSON ({bad}): {line[:80]!r}")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return ProtocolError(f"not a message (an object with a 'type'): {line[:80]!r}")
    command_id = data["id"] if isinstance(data.get("id"), int) else 0
    if data["type"] not in known:
        what = "command" if known is COMMANDS else "message"
        return ProtocolError(f"unknown {what} {data['type']!r}", command_id)
    return ProtocolError(f"a {data['type']!r} message that does not fit its type: {exc}", command_id)


def event_message(command_id: int, event: Event) -> EventMessage:
    """An engine event as the message of the command it belongs to."""
    return EventMessage(id=command_id, event=EventData(kind=event.kind, message=event.message, stage=event.stage,
                                                       index=event.index, total=event.total, data=_plain(event.data)))


def event_of(message: EventMessage) -> Event:
    """The `Event` a message carries."""
    data = message.event
    return Event(kind=data.kind, message=data.message, stage=data.stage, index=data.index, total=data.total,
                 data=dict(data.data))


def _plain(data: Any) -> Any:
    """Event data as JSON can carry it: typed values through the codec, anything else as its text."""
    try:
        return json.loads(json.dumps(to_data(data), default=str))
    except (TypeError, ValueError):
        return {"text": str(data)}
