"""A scripted stand-in for the interleaved timing's workers: each candidate answers its turns with latencies drawn
around a median the test gives, and a fake clock advances by each turn's length, so the stop rules of
planner.measure.interleave run as they do on real workers, deterministically and without starting a process."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from planner.measure import interleave
from planner.measure.interleave import Turn, TurnTiming
from planner.measure.worker import WorkerOutcome, WorkerStatus

SPREAD = 0.05
"""The relative spread (standard deviation over median) of a scripted candidate's calls, unless the test gives one."""


@dataclass
class Script:
    """The medians (ms) each candidate's label answers with, their spreads, the fake clock (s), and every turn asked."""

    medians: dict[str, float]
    spreads: dict[str, float] = field(default_factory=dict)
    now: float = 0.0
    turns: list[str] = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(7))

    def clock(self) -> float:
        """The fake time.perf_counter: seconds that move only when a scripted turn runs."""
        return self.now

    def turn(self, label: str, request: Turn) -> TurnTiming:
        """One block of calls around the label's median, filling request.block_s; the clock moves by its length."""
        median = self.medians[label]
        # As time_callable does: calls until the block's time is reached (the last one ends past it).
        count = max(1, min(request.max_samples, math.ceil(request.block_s * 1e3 / median)))
        samples = median * (1 + self.spreads.get(label, SPREAD) * self.rng.standard_normal(count))
        rewarm_s = max(request.rewarm_s, request.rewarm_calls * median / 1e3)
        wall = rewarm_s + float(samples.sum()) / 1e3
        started = self.now
        self.now += wall
        self.turns.append(label)
        return TurnTiming(samples_ms=tuple(float(s) for s in samples), started_s=started, wall_s=wall)


def _ok(value: Any) -> WorkerOutcome:
    return WorkerOutcome(WorkerStatus.OK, value, "", "", 0.0)


def scripted_conversation(script: Script) -> Callable[..., Any]:
    """A class that stands in for planner.measure.worker.Conversation, answering from `script`."""

    class ScriptedConversation:
        """A worker that is ready at once and answers each turn from the script (the factory never runs)."""

        def __init__(self, factory: Callable[..., Any], job: Any, *args: Any, **kwargs: Any) -> None:
            self.label = job.spec.label

        def start(self) -> None:
            """Nothing to spawn."""

        def wait_ready(self, *, timeout_s: float, cancel: Any = None) -> WorkerOutcome:
            """Ready at once."""
            return _ok(None)

        def ask(self, request: Any, *, timeout_s: float, cancel: Any = None) -> WorkerOutcome:
            """A turn's timing from the script; anything else (the info request) a session's description."""
            if isinstance(request, Turn):
                return _ok(script.turn(self.label, request))
            return _ok({"info": {"timer": "scripted"}, "threads": {}})

        def stop(self) -> None:
            """Nothing to stop."""

    return ScriptedConversation


def install(monkeypatch: pytest.MonkeyPatch, medians: dict[str, float],
            spreads: dict[str, float] | None = None) -> Script:
    """Replace the interleaved timing's workers and clock with a script of these medians (ms per label)."""
    script = Script(medians, dict(spreads or {}))
    monkeypatch.setattr(interleave, "Conversation", scripted_conversation(script))
    monkeypatch.setattr(interleave, "_now", script.clock)
    return script
