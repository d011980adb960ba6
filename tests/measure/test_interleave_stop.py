"""When interleaved turns stop: a quick plan's leaders stop once they are told apart or their allowance is spent;
without an allowance (the full method) every median is timed to its 2% interval.

The workers and the clock are scripted (scripted_turns.py): each candidate answers its turns with latencies around
a median the test gives, so every rule is checked deterministically and no process is started.
"""

from __future__ import annotations

import dataclasses

import pytest
from scripted_turns import install

from planner.measure.evaluate import MeasureJob
from planner.measure.interleave import InterleaveStop, time_interleaved, told_apart
from planner.measure.timer import MeasureSettings
from planner.plugins import CandidateSpec

# The full method's settings, as a quick plan's confirmation uses them.
FULL = MeasureSettings.default()
ALLOWANCE_S = 12.0


def _jobs(*labels: str) -> list[MeasureJob]:
    # Only the label and env are read before the (scripted) workers get the job.
    return [MeasureJob(model=None, spec=CandidateSpec(plugin="test.scripted", label=label))  # type: ignore[arg-type]
            for label in labels]


def test_leaders_whose_intervals_separate_stop_as_told_apart_before_the_allowance(monkeypatch) -> None:
    """20, 26 and 30 ms leaders (10% spread) are told apart once each has the full method's 1 s of turns."""
    script = install(monkeypatch, {"a": 20.0, "b": 26.0, "c": 30.0}, spreads={"a": 0.1, "b": 0.1, "c": 0.1})
    outcomes = time_interleaved(_jobs("a", "b", "c"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.APART] * 3
    assert all(o.ok and o.stats is not None and o.stats.samples >= FULL.min_samples for o in outcomes)
    rounds_s = outcomes[0].rounds_s
    assert rounds_s == pytest.approx(script.now) and rounds_s < ALLOWANCE_S / 2
    # Stopped at the first round that gave each its min_time_s of turns (a 0.4 s block and its 50 ms re-warm).
    assert {o.rounds for o in outcomes} == {3}
    assert told_apart([o.samples_ms for o in outcomes])
    # Their intervals are not yet 2% wide: the target did not decide, the comparison did.
    assert any(o.stats is not None and o.stats.ci95_rel > FULL.target_rel_ci for o in outcomes)


def test_slow_leaders_get_blocks_of_several_calls_and_are_told_apart_within_the_allowance(monkeypatch) -> None:
    """500 and 800 ms leaders (a busy 2-core machine): each turn holds three calls, so the re-warm call is a
    quarter of a turn, and six samples each tell them apart before the allowance. Without their screens' figures
    the first block is a single call, and the turns only grow once its median is known."""
    script = install(monkeypatch, {"a": 500.0, "b": 800.0})
    outcomes = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S,
                                expected_ms=[520.0, 760.0])
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.APART] * 2
    for outcome in outcomes:
        assert [b.samples for b in outcome.blocks] == [3, 3]
        assert outcome.stats is not None and 6 <= outcome.stats.samples < FULL.min_samples
    assert script.now < ALLOWANCE_S
    install(monkeypatch, {"a": 500.0, "b": 800.0})
    unknown = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    assert [b.samples for b in unknown[0].blocks][:2] == [1, 3]


def test_slow_tied_leaders_use_the_allowance_with_a_last_round_that_fits(monkeypatch) -> None:
    """Three 350 ms leaders take 4.2 s a round: a third round is started on the 3.6 s left, its turns shrunk to
    share it, so the allowance buys three rounds instead of two, and ends within a call of its 12 s."""
    script = install(monkeypatch, {"a": 350.0, "b": 350.0, "c": 350.0})
    outcomes = time_interleaved(_jobs("a", "b", "c"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S,
                                expected_ms=[350.0] * 3)
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.ALLOWANCE] * 3
    assert all(o.rounds == 3 and o.stats is not None and o.stats.samples >= 8 for o in outcomes)
    assert [b.samples for b in outcomes[0].blocks] == [3, 3, 2]
    assert ALLOWANCE_S - 1.0 <= script.now <= ALLOWANCE_S + 0.35


def test_leaders_that_never_separate_stop_at_the_allowance_and_stay_ranked(monkeypatch) -> None:
    """Two leaders with one median are never told apart: the rounds end within the allowance, and each says so."""
    script = install(monkeypatch, {"a": 20.0, "b": 20.0})
    first, second = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    for outcome in (first, second):
        assert outcome.ok and outcome.stopped_by is InterleaveStop.ALLOWANCE
        assert outcome.stats is not None and outcome.stats.p50_ms == pytest.approx(20.0, rel=0.05)
    # The allowance is used, not passed: the last round's blocks shrank to fit what was left (give or take a call).
    assert first.rounds_s == pytest.approx(script.now)
    assert ALLOWANCE_S - 0.1 <= first.rounds_s <= ALLOWANCE_S + 0.02
    assert first.rounds == second.rounds and script.turns.count("a") == script.turns.count("b")
    assert not told_apart([first.samples_ms, second.samples_ms])


def test_the_allowance_does_not_wait_for_intervals_at_the_target(monkeypatch) -> None:
    """Tied leaders settle at a 2% interval within a few rounds, where the full method stops; under an allowance
    that settles nothing, and they go on to the allowance."""
    install(monkeypatch, {"a": 20.0, "b": 20.0})
    quick = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    install(monkeypatch, {"a": 20.0, "b": 20.0})
    full = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60)
    assert [o.stopped_by for o in full] == [InterleaveStop.CI] * 2
    assert [o.stopped_by for o in quick] == [InterleaveStop.ALLOWANCE] * 2
    assert quick[0].rounds > full[0].rounds


def test_the_full_method_still_times_every_median_to_its_two_percent_interval(monkeypatch) -> None:
    """Without an allowance, noisy leaders that the leaders' rule tells apart at once are timed on until both
    intervals are 2% wide."""
    noisy = {"a": 0.12, "b": 0.12}
    install(monkeypatch, {"a": 20.0, "b": 30.0}, spreads=noisy)
    quick = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    install(monkeypatch, {"a": 20.0, "b": 30.0}, spreads=noisy)
    full = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60)
    assert [o.stopped_by for o in quick] == [InterleaveStop.APART] * 2 and quick[0].rounds == 3
    for outcome in full:
        assert outcome.ok and outcome.stopped_by is InterleaveStop.CI
        assert outcome.stats is not None and outcome.stats.ci95_rel <= FULL.target_rel_ci
    assert full[0].rounds > 2 * quick[0].rounds


def test_the_full_method_keeps_its_time_caps(monkeypatch) -> None:
    """A candidate too noisy for its target still stops at the full method's per-candidate cap, not an allowance."""
    install(monkeypatch, {"a": 20.0, "b": 30.0})
    tight = dataclasses.replace(FULL, target_rel_ci=0.001)
    outcomes = time_interleaved(_jobs("a", "b"), settings=tight, timeout_s=60)
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.TIME_CAP] * 2
    assert outcomes[0].rounds_s >= 2 * tight.max_time_s


def test_a_lone_leader_under_an_allowance_stops_at_its_target(monkeypatch) -> None:
    """With nothing to be told apart from, one candidate is timed to its 2% interval, within the allowance."""
    install(monkeypatch, {"a": 20.0})
    (lone,) = time_interleaved(_jobs("a"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    assert lone.ok and lone.stopped_by is InterleaveStop.CI and lone.rounds_s <= ALLOWANCE_S
    install(monkeypatch, {"a": 20.0})
    (short,) = time_interleaved(_jobs("a"), settings=FULL, timeout_s=60, allowance_s=1.0)
    assert short.ok and short.stopped_by is InterleaveStop.ALLOWANCE and short.rounds_s <= 1.0


def test_an_allowance_shorter_than_a_round_still_gives_every_leader_one_turn(monkeypatch) -> None:
    """The first round always runs (a leader with no samples could not be ranked); the second is not started."""
    script = install(monkeypatch, {"a": 20.0, "b": 30.0})
    outcomes = time_interleaved(_jobs("a", "b"), settings=FULL, timeout_s=60, allowance_s=0.1)
    assert [o.rounds for o in outcomes] == [1, 1] and script.turns == ["a", "b"]
    assert all(o.ok and o.stopped_by is InterleaveStop.ALLOWANCE for o in outcomes)


def test_told_apart_needs_the_fastest_interval_wholly_below_every_other() -> None:
    """The fastest's interval below both others' tells them apart, even while the two slower ones overlap."""
    fast = [10.0 + 0.01 * k for k in range(20)]
    slow = [20.0 + 0.01 * k for k in range(20)]
    assert told_apart([slow, fast, slow])  # order does not matter; the runners-up may tie
    assert not told_apart([fast, fast])  # identical: never apart
    assert not told_apart([fast, slow[:5]])  # 5 samples give no 95% interval of a median
    assert not told_apart([fast])  # nothing to tell it apart from
    overlapping = [10.05 + 0.01 * k for k in range(20)]  # its interval reaches into the fastest's
    assert not told_apart([fast, overlapping, slow])


def test_an_allowance_must_be_positive() -> None:
    """An allowance of nothing is a caller's mistake, not a run with no turns."""
    with pytest.raises(ValueError):
        time_interleaved(_jobs("a"), timeout_s=60, allowance_s=0.0)


def test_a_reference_takes_its_turns_but_does_not_keep_the_leaders_from_being_told_apart(monkeypatch) -> None:
    """A baseline timed beside 20 and 30 ms leaders at the fastest leader's own median (an ONNX model's runtime
    defaults can be as fast as the best setting): every round times it, under the load the leaders saw, yet the
    leaders stop as told apart, where counting it as a leader would have tied them to the allowance."""
    script = install(monkeypatch, {"a": 20.0, "b": 30.0, "base": 20.0})
    outcomes = time_interleaved(_jobs("a", "b", "base"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S,
                                reference=2)
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.APART] * 3
    assert {o.rounds for o in outcomes} == {outcomes[0].rounds} and script.turns.count("base") == outcomes[0].rounds
    assert outcomes[2].stats is not None and outcomes[2].stats.p50_ms == pytest.approx(20.0, rel=0.05)
    install(monkeypatch, {"a": 20.0, "b": 30.0, "base": 20.0})
    tied = time_interleaved(_jobs("a", "b", "base"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S)
    assert [o.stopped_by for o in tied] == [InterleaveStop.ALLOWANCE] * 3


def test_a_lone_leader_beside_a_reference_stops_when_both_medians_are_known(monkeypatch) -> None:
    """One leader and the baseline: nothing to tell apart, so both are timed to their 2% intervals (the speedup is
    the ratio of the two medians), within the allowance."""
    install(monkeypatch, {"a": 20.0, "base": 60.0})
    outcomes = time_interleaved(_jobs("a", "base"), settings=FULL, timeout_s=60, allowance_s=ALLOWANCE_S,
                                reference=1)
    assert [o.stopped_by for o in outcomes] == [InterleaveStop.CI] * 2
    with pytest.raises(ValueError):
        time_interleaved(_jobs("a"), timeout_s=60, reference=1)
