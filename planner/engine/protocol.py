"""The engine protocol: how a client (the TUI, `planner plan --engine subprocess`) drives `planner engine`.

The engine reads commands from its stdin and writes messages to its stdout, one JSON object per line,
through the planner's one codec (`planner.codec`). Nothing else ever reaches that stream: the engine
sends whatever a library prints to stderr (see `planner.engine.server`).

Every message is an object with a `type`. The engine speaks first, with a handshake; then each command
the client sends carries an `id`, and everything the engine sends about that command carries the same
`id`: progress events while it runs, then exactly one `result` or `error`. A `result` and an `error`
carry the session's `state` after the command (the results so far, which steps are done and which are
out of date, the output folder), so the client never keeps step rules of its own.

Client → engine:

``open``      a fresh session, set up from `model`, `input_shape`, `inputs`, `trust_code`, `target`,
              `requirements` (overrides such as ``{"latency_ms": 5}``), `requirements_file` and `out`.
``run``       one step (`step`, with its `args`); the steps are `STEPS` below.
``answer``    the user's replies to the checklist's open questions (`replies`, by question id): re-plans.
``cancel``    stop the running command: at the next safe point, or (`now`) by ending its measuring process.
``shutdown``  stop whatever runs, write what was measured, and exit (an optional `reason` goes into the goodbye).

Engine → client:

``hello``     the handshake, first line: `protocol` (`PROTOCOL_VERSION`), the `planner` version, the
              engine's `pid`, and the host's `hardware` (the detected profile, as results.json holds it); a
              detached engine (planner.engine.detached) adds its `run`, `run_dir` and `out` folders.
``event``     progress of command `id`: a stage, a candidate, a log line or a warning (`planner.events.Event`).
``result``    command `id` ended: its `value` and the session's `state`.
``error``     command `id` failed: the `problem`, the `fix`, the error's `kind`, and the `state`.
``bye``       the engine is exiting: its final `status` (`ok`, `interrupted`) and why (`reason`).

An example exchange (`>` client to engine, `<` engine to client; values shortened)::

    < {"type": "hello", "protocol": 1, "planner": "0.1.0", "pid": 4242, "hardware": {"cpu": {...}, ...}}
    > {"type": "open", "id": 1, "model": "demo:tiny", "target": "cpu", "out": "reports/tiny"}
    < {"type": "result", "id": 1, "value": {"source": "demo:tiny", "name": "tiny", "parameters": 1578, ...},
       "state": {"seq": 1, "done": ["model", "target"], "out_dir": "reports/tiny", ...}}
    > {"type": "run", "id": 2, "step": "profile", "args": {"quick": true}}
    < {"type": "event", "id": 2, "event": {"kind": "stage", "message": "timing the baseline: ...", ...}}
    > {"type": "cancel", "now": true}
    < {"type": "error", "id": 2, "problem": "profile was cancelled before it finished (...)",
       "fix": "run profile again to measure it", "kind": "Cancelled", "state": {...}}
    > {"type": "run", "id": 3, "step": "nonsense"}
    < {"type": "error", "id": 3, "problem": "unknown step 'nonsense'", "fix": "one of: detect, ...", ...}
    > {"type": "shutdown"}
    < {"type": "bye", "status": "ok", "reason": "the client asked", "out_dir": "reports/tiny"}

A line that is not JSON, or a command the engine does not know, gets an `error` (with the command's
`id` when it had one, else 0) and the engine keeps going. A client that reads a `hello` with another
protocol version stops with an error naming both versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from planner.codec import to_data
from planner.events import Event

PROTOCOL_VERSION = 1
"""Raised whenever a message changes in a way an older client or engine would misread."""

COMMANDS = ("open", "run", "answer", "cancel", "shutdown")
"""The commands a client sends."""

MESSAGES = ("hello", "event", "result", "error", "bye")
"""The messages the engine sends."""

STEPS = ("detect", "energy", "ceilings", "demos", "catalog", "load", "target", "requirements", "out_dir", "profile",
         "decide", "plugins", "optimize", "deploy", "verify", "finish", "save", "plan")
"""The steps `run` accepts: each is one `PlanSession` step (see `planner.engine.server`), and `plan`
runs the whole method as `planner plan` does."""

QUICK_STEPS = ("detect", "energy", "demos", "catalog", "target", "requirements", "out_dir", "decide", "plugins", "save")
"""Steps that take milliseconds: the engine answers them even while a long step runs (the TUI re-plans
when the requirements change during an optimize, as it always has)."""


class ProtocolError(ValueError):
    """A line that is not a message of this protocol (not JSON, not an object, no known `type`)."""


@dataclass(frozen=True)
class State:
    """The session after a command, as the client mirrors it: nothing else holds step rules."""

    results: dict[str, Any] = field(default_factory=dict)  # the PlanResults, as results.json holds them
    done: tuple[str, ...] = ()  # steps whose result is there and up to date
    stale: tuple[str, ...] = ()  # steps whose result is kept but out of date
    out_dir: str | None = None
    replies: dict[str, str] = field(default_factory=dict)  # the user's checklist replies, by question id
    running: str = ""  # the command still running (a quick step answered during a long one), else ""
    discards: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per change (model, inputs, ...): the
    # steps holding a result that it would throw away, so a client can ask before losing measured work
    seq: int = 0  # counts up with every state sent: replies read on different threads may be applied out of order


def encode(message: dict[str, Any]) -> str:
    """One message as its line (no newline): JSON through the codec, so typed values become plain data."""
    return json.dumps(to_data(message), separators=(",", ":"), default=str)


def decode(line: str) -> dict[str, Any]:
    """One line as a message; ProtocolError when it is not one (the caller decides whether that is fatal)."""
    try:
        message = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON ({exc.msg} at column {exc.colno}): {line[:80]!r}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError(f"not a message (an object with a 'type'): {line[:80]!r}")
    return message


def event_message(command_id: int, event: Event) -> dict[str, Any]:
    """An engine event as the `event` message of the command it belongs to."""
    return {"type": "event", "id": command_id,
            "event": {"kind": event.kind, "message": event.message, "stage": event.stage, "index": event.index,
                      "total": event.total, "data": _plain(event.data)}}


def event_of(message: dict[str, Any]) -> Event:
    """The `Event` an `event` message carries."""
    data = message.get("event") or {}
    return Event(kind=str(data.get("kind", "log")), message=str(data.get("message", "")),
                 stage=str(data.get("stage") or ""), index=data.get("index"), total=data.get("total"),
                 data=dict(data.get("data") or {}))


def _plain(data: Any) -> Any:
    """Event data as JSON can carry it: typed values through the codec, anything else as its text."""
    try:
        return json.loads(json.dumps(to_data(data), default=str))
    except (TypeError, ValueError):
        return {"text": str(data)}
