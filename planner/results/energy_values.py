"""Energy records on the bus: the plan's energy counter and idle power, and each candidate's energy per inference.

Kept apart from planner.results.values so the interaction cells (planner.results.interaction), which
values imports, can carry a figure too. Re-exported by planner.results.values.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from planner.hardware.energy.counter import Counter

__all__ = ["EnergySource", "EnergyStatus", "InferenceEnergy"]


class EnergyStatus(StrEnum):
    """What a candidate's energy figure is: a figure, or which of the reasons there is none."""

    MEASURED = "measured"
    BELOW_RESOLUTION = "below resolution"  # the net energy is within the counter's step and the idle draw's noise
    INVALID = "invalid"  # the counter went backwards or a read failed mid-window
    UNAVAILABLE = "unavailable"  # no readable counter here
    NOT_COVERED = "not covered"  # the counter does not see the device the candidate ran on


@dataclass(frozen=True)
class EnergySource:
    """The energy counter a plan's figures come from and the idle power subtracted from them, or why there is none.

    Never estimated from a TDP: without a readable counter `available` is False and `reason` says why
    (with `fix`, the admin change that makes an existing counter readable).
    """

    available: bool = False
    scope: str = ""  # what the figure covers: CPU package, GPU, SoC rails, SoC rails (PMIC)
    source: str = ""  # how it is read: 'RAPL (powercap sysfs)', 'NVML total energy'...
    detail: str = ""  # the domains or rails summed
    idle_w: float | None = None  # mean power with nothing measured running, subtracted from every window
    idle_spread_w: float | None = None  # how far the idle window's two halves differed: the idle draw's noise
    idle_window_s: float | None = None
    reason: str = ""
    fix: str = ""
    notes: tuple[str, ...] = ()  # what each other counter family said
    counter: Counter | None = None  # what a measuring worker opens


@dataclass(frozen=True)
class InferenceEnergy:
    """A candidate's energy per inference (one call at the model's batch) over its latency timing window.

    Net of idle: (energy over the window - idle power x the window) / the calls in it (warm-up included,
    as the window is).
    """

    status: EnergyStatus = EnergyStatus.UNAVAILABLE
    joules: float | None = None  # per inference, when measured
    scope: str = ""
    reason: str = ""  # why there is no figure, or what to know about it
    window_s: float | None = None
    calls: int | None = None
    gross_j: float | None = None  # the counter's energy over the window
    idle_j: float | None = None  # the idle power's share of it, subtracted
