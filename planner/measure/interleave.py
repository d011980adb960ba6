"""Time several candidates in turns, so that a change in the machine's load falls on all of them alike.

Timing candidates one after another lets a burst of load during one candidate's turn misorder
leaders that are close. Here every candidate is opened once, in its own spawned worker (the
isolation of ``run_isolated``: a crash, hang or error fails only that candidate), and the parent
runs rounds: each live worker in turn times a short block (a re-warm, since another runtime's
threads just ran, then ``block_s`` of timed calls with ``time_callable``, or ``BLOCK_CALLS`` calls
of a model too slow for that), the order reversed every other round (A B C, C B A, ...). Workers
that are not timing wait on their pipe and use no CPU. Each candidate's samples pool across its
blocks.

Stopping mirrors ``time_callable`` with each candidate's pooled samples: stop once every
candidate's median has a 95% interval within ``target_rel_ci`` (after ``min_samples`` and
``min_time_s`` of its own turns), or once every candidate still short of it has had ``max_time_s``
of turns (so the whole run takes at most the caps summed over candidates) and ``min_samples``, or
``HARD_CAP_FACTOR`` times that. A candidate that settles early keeps its turns until all do, so
every candidate's samples span the same time; one that reaches ``max_samples`` gets no more turns.

With an ``allowance_s`` (a quick plan's leaders) the question is which leader is fastest, not how
precisely each median is known: the rounds stop as soon as the leaders are told apart
(``told_apart``: once each has ``min_time_s`` of turns, the fastest median's 95% interval lies
wholly below every other's), or once the rounds have spent ``allowance_s`` seconds (the workers'
start-up is not counted), whichever comes first: as the allowance runs out, each turn's block
shrinks to its share of what is left, and a round is not started without room for one call each.
How long a 2% interval takes grows with the model's latency and the machine's noise; an allowance
does not.
A lone candidate has nothing to be told apart from: it stops at ``target_rel_ci`` or the allowance.

A ``reference`` job (the baseline the leaders' speedups are worked out against) takes its turns like the
others, so its median is timed under the same load, but it is not a leader: telling the leaders apart
leaves it out, and a lone leader beside it stops as a lone candidate does (it and the reference at
``target_rel_ci``, or the allowance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Sequence

import numpy as np

from planner.measure.evaluate import MeasureJob, open_timed, plain_failure
from planner.measure.stats import LatencyStats, ci95_rel_of, compute_stats, median_ci95
from planner.measure.timer import HARD_CAP_FACTOR, MeasureSettings, time_callable
from planner.measure.worker import Conversation, WorkerOutcome, WorkerStatus

BLOCK_S = 0.4
"""Seconds of timed calls in one turn: long enough to hold many samples, short enough that turns interleave."""

BLOCK_CALLS = 3
"""The calls a turn is made to hold once a candidate's median is known (or expected): a model slower than
160 ms a call (BLOCK_S over 2.5) gets a longer block, so the re-warm call before it is a quarter of its turn
instead of half (one re-warm call and one timed call when a call outlasts the block)."""

REWARM_CALLS = 1
REWARM_S = 0.05
"""The re-warm before each block (calls, seconds): caches and thread pools another runtime just used.

It lasts both: at least one call (every weight touched, every pool thread woken) and 50 ms. The time
decides for any model faster than 50 ms a call; a slower one re-warms with its one call, which already
lasts longer than the 50 ms. (Three calls made a 150 ms model's re-warm as long as its 0.4 s block.)"""

MAX_ROUNDS = 1000
"""A bound on rounds whatever the settings say (the time caps normally end far sooner)."""

_INFO = "info"
"""The request a worker answers with its session's settings in force and its timer."""

_SHORTEST_BLOCK_S = 1e-3
"""The block of a turn the allowance has almost no room left for: one timed call (the block ends with it)."""

# Module-level so tests can substitute a deterministic clock (seconds, as time.perf_counter).
_now: Callable[[], float] = time.perf_counter


class InterleaveStop(StrEnum):
    """Why a candidate's interleaved timing stopped (the first three read as ``timer.StopReason``'s)."""

    CI = "ci"
    TIME_CAP = "time cap"
    MAX_SAMPLES = "max samples"
    MAX_ROUNDS = "max rounds"
    APART = "told apart"  # the fastest median's interval lay wholly below every other's (with an allowance)
    ALLOWANCE = "allowance spent"  # the rounds used their allowance before the candidates were told apart
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(frozen=True)
class Turn:
    """What a worker is asked in its turn: re-warm, then time ``block_s`` of calls (at most ``max_samples``)."""

    rewarm_calls: int
    rewarm_s: float
    block_s: float
    max_samples: int


@dataclass(frozen=True)
class TurnTiming:
    """A worker's answer to one ``Turn``."""

    samples_ms: tuple[float, ...]
    started_s: float  # time.monotonic() in the worker as its turn began (one clock for every process on Linux)
    wall_s: float  # the turn, re-warm included


@dataclass(frozen=True)
class BlockRecord:
    """One turn of one candidate: which round, its place in that round's order, and what it gave."""

    round: int
    position: int
    samples: int
    started_s: float
    wall_s: float


@dataclass(frozen=True)
class InterleavedOutcome:
    """One candidate's interleaved timing, in the order of the jobs given.

    ``stats`` are over every sample its turns gave (None when it failed or gave none); ``rounds``
    counts its turns; ``wall_s`` runs from the workers' start to its end (its failure, or the last
    round). A failed candidate has ``status`` FAILED, TIMEOUT or CRASHED and a plain ``reason``
    (``details``: a runtime's whole message when the reason shortens it); a cancelled run leaves every
    candidate still in it CANCELLED. ``info`` holds the session's settings in force and the timer used,
    ``threads`` the worker's thread settings (as ``CandidateResult.info`` and ``.threads`` hold them).
    ``rounds_s`` is how long the rounds took, every candidate's turns together and the workers'
    start-up left out (the figure an allowance is counted against; the same for every candidate).
    """

    label: str
    status: WorkerStatus
    stats: LatencyStats | None
    stopped_by: InterleaveStop
    rounds: int
    wall_s: float
    samples_ms: tuple[float, ...] = ()
    reason: str = ""
    details: str = ""
    traceback: str = ""
    info: dict = field(default_factory=dict)
    threads: dict = field(default_factory=dict)
    blocks: tuple[BlockRecord, ...] = ()
    rounds_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the candidate was timed to the end (stats present, neither failed nor cancelled)."""
        return self.status is WorkerStatus.OK and self.stats is not None


class _TurnServer:
    """Worker side: one opened, warmed candidate that times a block for each ``Turn`` it is sent."""

    def __init__(self, job: MeasureJob, settings: MeasureSettings, warmup_cap_s: float | None = None) -> None:
        from planner.measure.threads import thread_settings

        # Opened as run_job opens it, so an interleaved figure is the same kind as a lone one.
        self.session, self.timer, self.pool = open_timed(job)
        self.threads = thread_settings()
        # The first warm-up is the full one (one timed call ends it); later turns only re-warm.
        warm = MeasureSettings(warmup_count=settings.warmup_count, warmup_s=settings.warmup_s, min_samples=1,
                               max_samples=1, min_time_s=0.0, max_time_s=warmup_cap_s or settings.max_time_s)
        self._time(warm)

    def __call__(self, request: Any) -> Any:
        """Answer a ``Turn`` with its ``TurnTiming``, or ``"info"`` with the session's settings."""
        if request == _INFO:
            return {"info": {**self.session.info(), "timer": self.timer.label}, "threads": self.threads}
        if not isinstance(request, Turn):
            raise TypeError(f"a timing worker takes a Turn or {_INFO!r}, not {request!r}")
        # No early stop on the interval inside a block (target 0): the parent judges the pooled samples.
        block = MeasureSettings(warmup_count=request.rewarm_calls, warmup_s=request.rewarm_s, min_samples=1,
                                max_samples=request.max_samples, min_time_s=request.block_s,
                                max_time_s=request.block_s, target_rel_ci=0.0)
        started = time.monotonic()
        timing = self._time(block)
        return TurnTiming(samples_ms=timing.samples_ms, started_s=started, wall_s=timing.wall_s)

    def _time(self, settings: MeasureSettings) -> Any:
        return time_callable(self.session.run, self.pool, settings=settings, sync=self.timer.sync,
                             event_timer=self.timer.event_timer)


def open_for_turns(job: MeasureJob, settings: MeasureSettings, warmup_cap_s: float | None = None) -> _TurnServer:
    """Worker side (a ``Conversation`` factory): open the job's candidate, warm it up, and serve its turns.

    The first warm-up stops at ``warmup_cap_s`` seconds (default: ``settings.max_time_s``), as ``time_callable``'s does.
    """
    return _TurnServer(job, settings, warmup_cap_s)


@dataclass
class _State:
    """The parent's running record of one candidate."""

    label: str
    expected_ms: float | None = None  # a call's expected time before any turn (a screen's median)
    samples: list[float] = field(default_factory=list)
    blocks: list[BlockRecord] = field(default_factory=list)
    timed_s: float = 0.0
    info: dict = field(default_factory=dict)
    failure: WorkerOutcome | None = None
    failed_at: float = 0.0
    reason: str = ""
    details: str = ""

    def add(self, round_index: int, position: int, turn: TurnTiming) -> None:
        self.samples.extend(turn.samples_ms)
        self.timed_s += turn.wall_s
        self.blocks.append(BlockRecord(round_index, position, len(turn.samples_ms), turn.started_s, turn.wall_s))

    def settled(self, settings: MeasureSettings) -> bool:
        """Whether its median's interval reached the target, after min_samples and min_time_s of turns."""
        return (len(self.samples) >= settings.min_samples and self.timed_s >= settings.min_time_s
                and ci95_rel_of(self.samples) <= settings.target_rel_ci)

    def judged(self, settings: MeasureSettings) -> bool:
        """Whether its samples may be compared with another's: min_time_s of turns, so that no single block
        decides (an interval of its median needs 6 samples besides: told_apart checks that).

        Not the full method's min_samples: that is the least for a figure reported alone, and a 500 ms model
        would spend a quick plan's whole allowance reaching it; the interval's own coverage is what makes a
        comparison sound, at any count it exists for."""
        return self.timed_s >= settings.min_time_s

    def call_s(self) -> float:
        """One call's time as known so far: its median, or the expected one before its first turn (0: unknown)."""
        call_ms = float(np.median(self.samples)) if self.samples else self.expected_ms
        return call_ms / 1e3 if call_ms else 0.0

    def block_s(self, least: float) -> float:
        """Its next block's length: `least`, or BLOCK_CALLS of its call when that is longer."""
        # A block ends with the first call past its time: half a call short of BLOCK_CALLS ends on the last one.
        return max(least, (BLOCK_CALLS - 0.5) * self.call_s())

    def least_turn_s(self, rewarm_calls: int, rewarm_s: float) -> float:
        """The shortest turn it can have: its re-warm, then one timed call."""
        return max(rewarm_s, rewarm_calls * self.call_s()) + self.call_s()

    def finished(self, settings: MeasureSettings) -> bool:
        """Whether it needs no more samples: settled, or at max_samples (then it gets no more turns)."""
        return len(self.samples) >= settings.max_samples or self.settled(settings)


def told_apart(samples: Sequence[Sequence[float]]) -> bool:
    """Whether the candidate with the lowest median is told apart from the others: its median's 95% interval
    lies wholly below every other candidate's.

    This is the decision a ranking by median latency takes from these figures, the winner; once it holds,
    more turns can only order the runners-up more precisely. (Every adjacent pair in median order having
    disjoint intervals implies it.) False for fewer than two candidates, or when one has too few samples for
    an interval (planner.measure.stats: fewer than 6).
    """
    ranked: list[tuple[float, float, float]] = []  # (median, low, high)
    for s in samples:
        arr = np.sort(np.asarray(s, dtype=np.float64))
        bounds = median_ci95(arr)
        if bounds is None:
            return False
        ranked.append((float(np.median(arr)), *bounds))
    if len(ranked) < 2:
        return False
    ranked.sort()
    leader_high = ranked[0][2]
    return all(leader_high < low for _, low, _ in ranked[1:])


def _failure_text(outcome: WorkerOutcome, timeout_reason: str) -> tuple[str, str]:
    """(plain reason, whole text or '') for a worker that failed, crashed or timed out (as ``measure`` words them)."""
    if outcome.status is WorkerStatus.TIMEOUT:
        return f"{timeout_reason}; the candidate hung or is too slow here", ""
    if outcome.status is WorkerStatus.FAILED:
        return plain_failure(outcome.reason)
    return outcome.reason, ""


def time_interleaved(
    jobs: Sequence[MeasureJob],
    *,
    settings: MeasureSettings | None = None,
    timeout_s: float,
    turn_timeout_s: float | None = None,
    cancel: Callable[[], bool] | None = None,
    block_s: float = BLOCK_S,
    rewarm_calls: int = REWARM_CALLS,
    rewarm_s: float = REWARM_S,
    max_rounds: int = MAX_ROUNDS,
    sys_path: Sequence[str] = (),
    allowance_s: float | None = None,
    warmup_cap_s: float | None = None,
    expected_ms: Sequence[float | None] = (),
    reference: int | None = None,
) -> list[InterleavedOutcome]:
    """Time the jobs' candidates in alternating turns; one outcome per job, in the jobs' order.

    Each job's candidate is opened in its own spawned worker with the job's ``env`` (thread variables)
    applied first, as ``measure`` does; only ``job.model``, ``job.spec`` and ``job.env`` are read.
    ``settings`` (default: ``MeasureSettings.default()``) give the first warm-up and the stopping rule
    (see the module docstring); ``drop_above_ms`` is not applied, leaders are timed to the end.
    ``allowance_s`` (default: none) switches to the leaders' rule: stop once they are told apart or
    the rounds have spent ``allowance_s`` seconds (the caps above still apply).
    ``warmup_cap_s`` bounds each worker's first warm-up (default: ``settings.max_time_s``).
    ``expected_ms`` (one per job, or none) is each call's expected time, a screen's median say: a slow
    candidate's first block holds ``BLOCK_CALLS`` calls as its later ones do, so rounds are alike from
    the first and the allowance can tell how many fit.
    ``reference`` (an index into ``jobs``, default none) is timed in the turns but left out of telling the
    candidates apart (see the module docstring).
    ``timeout_s`` bounds each worker's start-up (spawn, open, warm-up), counted from its start;
    ``turn_timeout_s`` (default ``timeout_s``) bounds each turn. A worker that fails, crashes or
    times out ends alone; the others go on. ``cancel`` is checked between turns and while waiting:
    once it returns True every worker is stopped and the candidates still running come back
    CANCELLED (with stats over the turns they had, if any). On KeyboardInterrupt every worker is
    stopped and the interrupt re-raised.
    """
    if timeout_s <= 0 or (turn_timeout_s is not None and turn_timeout_s <= 0):
        raise ValueError("timeout_s and turn_timeout_s must be positive")
    if block_s <= 0 or rewarm_calls < 0 or rewarm_s < 0 or max_rounds < 1:
        raise ValueError("need block_s > 0, rewarm_calls >= 0, rewarm_s >= 0 and max_rounds >= 1")
    if (allowance_s is not None and allowance_s <= 0) or (warmup_cap_s is not None and warmup_cap_s <= 0):
        raise ValueError("allowance_s and warmup_cap_s must be positive")
    if not jobs:
        return []
    settings = settings or MeasureSettings.default()
    turn_timeout = turn_timeout_s or timeout_s
    if expected_ms and len(expected_ms) != len(jobs):
        raise ValueError("expected_ms needs one entry per job")
    if reference is not None and not 0 <= reference < len(jobs):
        raise ValueError("reference must be the index of one of the jobs")
    states = [_State(job.spec.label or job.spec.plugin, expected_ms=expected_ms[i] if expected_ms else None)
              for i, job in enumerate(jobs)]
    started = _now()
    conversations = [Conversation(open_for_turns, job, settings, warmup_cap_s, env=job.env or None,
                                  sys_path=tuple(sys_path))
                     for job in jobs]
    cancelled = False
    cut_by = InterleaveStop.MAX_ROUNDS  # what stopped the candidates that had not settled

    def fail(i: int, outcome: WorkerOutcome, timeout_reason: str) -> None:
        nonlocal cancelled
        if outcome.status is WorkerStatus.CANCELLED:
            cancelled = True
            return
        state = states[i]
        state.failure, state.failed_at = outcome, _now()
        state.reason, state.details = _failure_text(outcome, timeout_reason)

    try:
        for conversation in conversations:
            conversation.start()
        # Started together, so start-up overlaps; each deadline counts from its own worker's start.
        for i, conversation in enumerate(conversations):
            ready = conversation.wait_ready(timeout_s=timeout_s, cancel=cancel)
            if not ready.ok:
                fail(i, ready, f"did not open and warm up within {timeout_s:g} s")
            else:
                described = conversation.ask(_INFO, timeout_s=turn_timeout, cancel=cancel)
                if described.ok:
                    states[i].info = dict(described.value)
                else:
                    fail(i, described, f"did not describe its session within {turn_timeout:g} s")
            if cancelled:
                break
        live = [i for i, s in enumerate(states) if s.failure is None]
        rounds_from = _now()  # the allowance counts turns only: every worker's start-up is behind us
        for round_index in range(max_rounds):
            if cancelled or not live:
                break
            order = live if round_index % 2 == 0 else live[::-1]
            for position, i in enumerate(order):
                if cancel is not None and cancel():
                    cancelled = True
                    break
                remaining = settings.max_samples - len(states[i].samples)
                if remaining <= 0:
                    continue
                block = states[i].block_s(block_s)
                if allowance_s is not None:
                    # Each turn left in the round gets an equal share of what the allowance has left, its re-warm
                    # and the call that ends its block included: the last round fits instead of being dropped.
                    share = (allowance_s - (_now() - rounds_from)) / (len(order) - position)
                    block = max(min(block, share - states[i].least_turn_s(rewarm_calls, rewarm_s)), _SHORTEST_BLOCK_S)
                answer = conversations[i].ask(Turn(rewarm_calls, rewarm_s, block, remaining),
                                              timeout_s=turn_timeout, cancel=cancel)
                if answer.ok:
                    states[i].add(round_index, position, answer.value)
                else:
                    fail(i, answer, f"a timing turn did not finish within {turn_timeout:g} s")
                    if cancelled:
                        break
            live = [i for i in live if states[i].failure is None]
            if cancelled or not live:
                break
            timed = [states[i] for i in live]
            ranked = [states[i] for i in live if i != reference]  # the reference is timed, not told apart
            if allowance_s is not None and len(ranked) > 1:
                # Leaders: only telling them apart ends the rounds early; intervals at the target do not.
                if all(s.judged(settings) for s in ranked) and told_apart([s.samples for s in ranked]):
                    cut_by = InterleaveStop.APART
                    break
                unsettled = [s for s in timed if len(s.samples) < settings.max_samples]
            else:
                # A settled candidate keeps its turns while any other has not settled (see the module docstring).
                unsettled = [s for s in timed if not s.finished(settings)]
            if not unsettled:
                break
            # A round is started only when the allowance has room left for each candidate's shortest turn (its
            # turns then share what is left), so the rounds end within it, give or take a call.
            left = allowance_s - (_now() - rounds_from) if allowance_s is not None else 0.0
            if allowance_s is not None and left < sum(s.least_turn_s(rewarm_calls, rewarm_s) for s in timed):
                cut_by = InterleaveStop.ALLOWANCE
                break
            # Each candidate's cap counts its own turns; as in time_callable it waits for min_samples
            # unless that would take HARD_CAP_FACTOR times the cap.
            if all(s.timed_s >= settings.max_time_s and len(s.samples) >= settings.min_samples for s in unsettled) \
                    or all(s.timed_s >= HARD_CAP_FACTOR * settings.max_time_s for s in unsettled):
                cut_by = InterleaveStop.TIME_CAP
                break
        ended = _now()
        rounds_s = ended - rounds_from
    finally:
        # Every way out, KeyboardInterrupt included, leaves no worker behind.
        for conversation in conversations:
            conversation.stop()
    return [_outcome(s, settings, cut_by=cut_by, cancelled=cancelled, started=started, ended=ended,
                     rounds_s=rounds_s) for s in states]


def _outcome(state: _State, settings: MeasureSettings, *, cut_by: InterleaveStop, cancelled: bool,
             started: float, ended: float, rounds_s: float) -> InterleavedOutcome:
    """The record of one candidate once the rounds are over."""
    samples = tuple(state.samples)
    stats = compute_stats(samples) if samples else None
    common: dict[str, Any] = dict(label=state.label, rounds=len(state.blocks), samples_ms=samples,
                                  info=state.info.get("info", {}), rounds_s=rounds_s,
                                  threads=state.info.get("threads", {}), blocks=tuple(state.blocks))
    if state.failure is not None:
        return InterleavedOutcome(status=state.failure.status, stats=None, stopped_by=InterleaveStop.FAILED,
                                  wall_s=state.failed_at - started, reason=state.reason, details=state.details,
                                  traceback=state.failure.traceback, **common)
    if cancelled:
        return InterleavedOutcome(status=WorkerStatus.CANCELLED, stats=stats, stopped_by=InterleaveStop.CANCELLED,
                                  wall_s=ended - started, reason="cancelled before its timing finished", **common)
    if stats is None:
        # Only when max_rounds ran out before its first turn: nothing failed, nothing was timed.
        return InterleavedOutcome(status=WorkerStatus.FAILED, stats=None, stopped_by=cut_by, wall_s=ended - started,
                                  reason="no samples: the rounds ended before its first turn", **common)
    stopped_by: InterleaveStop
    if cut_by in (InterleaveStop.APART, InterleaveStop.ALLOWANCE):
        # The leaders' rule: settling on the target ended nothing, the comparison (or the time) did.
        stopped_by = cut_by
    elif state.settled(settings):
        stopped_by = InterleaveStop.CI
    elif len(samples) >= settings.max_samples:
        stopped_by = InterleaveStop.MAX_SAMPLES
    else:
        stopped_by = cut_by
    return InterleavedOutcome(status=WorkerStatus.OK, stats=stats, stopped_by=stopped_by, wall_s=ended - started,
                              **common)
