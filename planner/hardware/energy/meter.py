"""Reading a counter over a window: a cumulative counter is read at both ends; sampled rails are polled by a
thread and integrated. Every way a figure can go wrong (a read fails, a counter wraps or goes backwards)
ends in a Reading with a reason, never a negative energy.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from planner.hardware._files import FileReader, read_file
from planner.hardware.energy.counter import Counter, CounterFamily, EnergyReadError, Reading
from planner.hardware.energy.gpu import NvmlEnergy
from planner.hardware.energy.ina3221 import read_ina3221_watts
from planner.hardware.energy.pmic import CommandRunner, read_pmic_watts, run_command
from planner.hardware.energy.rapl import read_rapl

Clock = Callable[[], float]


class Meter(ABC):
    """Measures the energy a counter sees between `start` and `stop`; `close` releases what it opened.

    The interface the two ways of reading a counter implement: `CumulativeMeter` and `SampledMeter`.
    """

    @abstractmethod
    def start(self) -> None:
        """Begin a window."""

    @abstractmethod
    def stop(self) -> Reading:
        """End the window and return its energy (or why there is no figure)."""

    def close(self) -> None:
        """Release the counter (an NVML session); a meter may be started again until then."""
        return None  # a sysfs counter holds nothing open; a meter that does overrides this


def counter_delta(before: Sequence[float], after: Sequence[float], ranges: Sequence[int] = (),
                  scale: float = 1.0) -> tuple[float | None, str, str]:
    """(joules, reason, note) between two reads of a cumulative counter with one value per domain.

    A domain with a wraparound point (RAPL's max_energy_range_uj) that reads lower at the end wrapped:
    it is undone once (a window of seconds cannot wrap twice: the smallest range is minutes at full
    power). A domain without one that reads lower went backwards: no figure, with the reason.
    """
    total = 0.0
    notes = []
    for n, (a, b) in enumerate(zip(before, after)):
        top = ranges[n] if n < len(ranges) else 0
        if b >= a:
            total += b - a
        elif top > 0 and a <= top:
            total += b + top - a
            notes.append(f"domain {n} wrapped around at {top} and was unwrapped once")
        else:
            return None, f"the counter went backwards ({a:g} then {b:g}) during the window", ""
    return total * scale, "", "; ".join(notes)


class CumulativeMeter(Meter):
    """RAPL or NVML: read the running total at both ends of the window."""

    def __init__(self, read: Callable[[], Sequence[float]], *, ranges: Sequence[int] = (), scale: float = 1.0,
                 resolution_j: float = 0.0, clock: Clock = time.perf_counter,
                 on_close: Callable[[], None] | None = None) -> None:
        self._read, self._ranges, self._scale = read, tuple(ranges), scale
        self._resolution, self._clock, self._on_close = resolution_j, clock, on_close
        self._before: Sequence[float] = ()
        self._t0 = 0.0
        self._error = ""

    def start(self) -> None:
        """Read the total now."""
        self._error = ""
        try:
            self._before = tuple(self._read())
        except EnergyReadError as exc:
            self._error = str(exc)
        self._t0 = self._clock()

    def stop(self) -> Reading:
        """Read the total again; the difference, unwrapped where the counter allows."""
        seconds = self._clock() - self._t0
        if self._error:
            return Reading(None, seconds, reason=self._error)
        try:
            after = tuple(self._read())
        except EnergyReadError as exc:
            return Reading(None, seconds, reason=str(exc))
        joules, reason, note = counter_delta(self._before, after, self._ranges, self._scale)
        return Reading(joules, seconds, reason=reason, note=note, resolution_j=self._resolution)

    def close(self) -> None:
        """Release the counter."""
        if self._on_close is not None:
            self._on_close()


class SampledMeter(Meter):
    """INA3221 or PMIC rails: power polled by a thread every `interval_s` and integrated (trapezoids)."""

    def __init__(self, watts: Callable[[], float], *, interval_s: float, clock: Clock = time.perf_counter) -> None:
        self._watts, self._interval, self._clock = watts, interval_s, clock
        self._samples: list[tuple[float, float]] = []
        self._error = ""
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        try:
            value = self._watts()
        except EnergyReadError as exc:
            self._error = self._error or str(exc)
            return
        if value < 0:
            self._error = self._error or f"a rail read a negative power ({value:g} W)"
            return
        self._samples.append((self._clock(), value))

    def _poll(self) -> None:
        while not self._halt.wait(self._interval):
            self._sample()

    def start(self) -> None:
        """Take the first sample and start polling."""
        self._samples, self._error = [], ""
        self._halt.clear()
        self._sample()
        self._thread = threading.Thread(target=self._poll, name="energy-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> Reading:
        """Stop polling, take the last sample and integrate."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._sample()
        samples = self._samples
        seconds = samples[-1][0] - samples[0][0] if len(samples) >= 2 else 0.0
        if self._error:
            return Reading(None, seconds, reason=self._error)
        if len(samples) < 2 or seconds <= 0:
            return Reading(None, seconds, reason="too few power samples to integrate")
        joules = sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(samples, samples[1:]))
        # One sample period at the highest power seen: what a change between two samples can hide.
        return Reading(joules, seconds, resolution_j=max(w for _, w in samples) * self._interval)


def open_meter(counter: Counter, *, nvml_module: Any | None = None, vcgencmd: CommandRunner | None = None,
               reader: FileReader = read_file, clock: Clock = time.perf_counter) -> Meter:
    """A meter on `counter` (raises EnergyReadError when NVML cannot be opened)."""
    if counter.family is CounterFamily.RAPL:
        return CumulativeMeter(lambda: read_rapl(counter, reader), ranges=counter.max_ranges, scale=1e-6,
                               resolution_j=counter.resolution_j, clock=clock)
    if counter.family is CounterFamily.NVML:
        session = NvmlEnergy(counter, nvml_module)
        return CumulativeMeter(lambda: (session.read_j(),), resolution_j=counter.resolution_j, clock=clock,
                               on_close=session.close)
    if counter.family is CounterFamily.INA3221:
        return SampledMeter(lambda: read_ina3221_watts(counter, reader), interval_s=counter.sample_interval_s,
                            clock=clock)
    run = vcgencmd or run_command
    return SampledMeter(lambda: read_pmic_watts(counter, run), interval_s=counter.sample_interval_s, clock=clock)


@dataclass(frozen=True)
class IdlePower:
    """Power drawn with nothing measured running: the mean over a window, and how far its two halves differed."""

    watts: float | None
    spread_w: float = 0.0  # |first half - second half|: the idle draw's own noise
    seconds: float = 0.0
    reason: str = ""  # why there is no figure


def measure_idle(meter: Meter, seconds: float, *, sleep: Callable[[float], None] = time.sleep) -> IdlePower:
    """Idle power over `seconds`, in two halves so its noise is known as well as its mean."""
    halves = []
    for _ in range(2):
        meter.start()
        sleep(seconds / 2)
        halves.append(meter.stop())
    bad = next((h for h in halves if not h.valid), None)
    total_s = sum(h.seconds for h in halves)
    if bad is not None or total_s <= 0:
        return IdlePower(None, seconds=total_s, reason=bad.reason if bad else "the idle window took no time")
    watts = [h.watts or 0.0 for h in halves]
    return IdlePower(sum(h.joules or 0.0 for h in halves) / total_s, spread_w=abs(watts[0] - watts[1]),
                     seconds=total_s)
