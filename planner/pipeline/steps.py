"""The session's step graph: the steps of the method, what each step's result is made from, and what
redoing a step or changing a setting makes out of date.

It is declared here once, as data. `PlanSession` keeps which steps are done and applies the graph in
every setter and step (`load`, `set_target`, `set_requirements`, `measure_ceilings`, `profile`,
`decide`, `optimize`, `finish`); the TUI only reads its answer (`PlanSession.done_steps()`,
`PlanSession.stale_steps()`) and never decides what a change invalidates.

When a step is redone, every step made from it goes out of date in one of two ways:

* stale: its result is kept (it can still be read and shown) but is to be redone. New requirements
  leave the measured candidates as they were, but the plan they were chosen by has changed.
* discarded: its result means nothing any more and is forgotten: a baseline of another model, the
  user's checklist replies about another model, speedups over a baseline that was measured again.

Whatever is made from a discarded result is discarded too, and whatever is made from a stale one goes
stale. A step that holds no result stays without one, but what is made from it is still reached: new
requirements make a report saved before any plan stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class Step(StrEnum):
    """One step of the method, as the session records it (declared in an order where each step
    comes after every step it is made from)."""

    HARDWARE = "hardware"
    """This machine detected, and its roofline ceilings measured (or read from the cache)."""
    MODEL = "model"
    """The model loaded and checked, with its inputs."""
    TARGET = "target"
    """The deployment target (cpu, nvidia, edge), resolved from `auto` on this machine."""
    REQUIREMENTS = "requirements"
    """Latency, throughput, memory, size and accuracy targets."""
    PROFILE = "profile"
    """The baseline: timed, analysed, its reference outputs kept (on the validation data, if any)."""
    CHECKLIST = "checklist"
    """The user's replies to the checklist's open questions (none in a headless plan)."""
    PLAN = "plan"
    """The checklist answered, the decision tree walked, and the plan made."""
    OPTIMIZE = "optimize"
    """The candidates built, measured, gated and ranked."""
    REPORT = "report"
    """results.json and report.md written to the output folder."""


class Change(StrEnum):
    """What a user (or a command line) can change in a session."""

    MODEL = "model"
    """Another model loaded."""
    INPUTS = "inputs"
    """The same model loaded again with other inputs (shapes, dtypes, value ranges)."""
    TARGET = "target"
    """Another deployment target."""
    REQUIREMENTS = "requirements"
    """Other requirements."""


class Fate(StrEnum):
    """What redoing a step does to a step made from it."""

    STALE = "stale"
    """Kept, to be redone."""
    DISCARDED = "discarded"
    """Forgotten: it means nothing any more."""


MADE_FROM: Mapping[Step, tuple[Step, ...]] = {
    Step.HARDWARE: (),
    Step.MODEL: (),
    Step.TARGET: (),
    Step.REQUIREMENTS: (),
    Step.PROFILE: (Step.MODEL,),
    Step.CHECKLIST: (Step.MODEL,),
    Step.PLAN: (Step.PROFILE, Step.TARGET, Step.REQUIREMENTS, Step.CHECKLIST),
    Step.OPTIMIZE: (Step.PROFILE, Step.PLAN),
    Step.REPORT: (Step.PROFILE, Step.PLAN, Step.OPTIMIZE),
}
"""What each step's result is made from: when one of these is redone, the step is out of date.

The ceilings are not among what the baseline is made from: measuring them again (the TUI's Hardware
step) keeps the baseline, as it always has."""

DISCARDS: frozenset[tuple[Step, Step]] = frozenset({
    (Step.MODEL, Step.PROFILE),  # a baseline of another model (or of other inputs)
    (Step.MODEL, Step.CHECKLIST),  # replies about another model
    (Step.PROFILE, Step.OPTIMIZE),  # speedups over a baseline that was measured again
})
"""(made from, step) pairs where redoing the first discards the second instead of making it stale."""

CHANGES: Mapping[Change, Step] = {
    Change.MODEL: Step.MODEL,
    Change.INPUTS: Step.MODEL,
    Change.TARGET: Step.TARGET,
    Change.REQUIREMENTS: Step.REQUIREMENTS,
}
"""The step each change sets: a change is that step redone with the new value."""

DEPENDENTS: Mapping[Step, tuple[Step, ...]] = {
    step: tuple(s for s in Step if step in MADE_FROM[s]) for step in Step
}
"""The steps made directly from each step (MADE_FROM turned around)."""


def consequences(redone: Step) -> dict[Step, Fate]:
    """What redoing `redone` does to every step made from it, directly or not, in step order.

    A new target makes the plan, the candidates and the report stale; another model discards
    everything from the baseline on; a baseline measured again discards the candidates (and so
    the report) and makes the plan stale.
    """
    fates: dict[Step, Fate] = {}
    for step in Step:  # declaration order: whatever a step is made from comes before it
        reached = []
        for source in MADE_FROM[step]:
            if source is redone:
                reached.append(Fate.DISCARDED if (source, step) in DISCARDS else Fate.STALE)
            elif source in fates:
                reached.append(fates[source])
        if reached:
            fates[step] = Fate.DISCARDED if Fate.DISCARDED in reached else Fate.STALE
    return fates


def invalidated_by(change: Change | str) -> dict[Step, Fate]:
    """What a change makes out of date: the consequences of redoing the step it sets."""
    return consequences(CHANGES[Change(change)])
