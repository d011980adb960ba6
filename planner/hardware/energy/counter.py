"""What an energy counter is (a picklable description a measuring worker can reopen) and what a read gave."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CounterFamily(StrEnum):
    """Where the energy comes from; decides how the counter is read."""

    RAPL = "rapl"  # cumulative microjoules per CPU package, wraps at max_energy_range_uj
    NVML = "nvml"  # cumulative millijoules since the driver loaded, per GPU
    INA3221 = "ina3221"  # instantaneous volts and amps per rail: sampled and integrated
    PMIC = "pmic"  # Raspberry Pi 5 PMIC rails through vcgencmd: sampled and integrated


# What each family's figure covers, in the words the report uses.
SCOPE_CPU = "CPU package"
SCOPE_GPU = "GPU"
SCOPE_SOC = "SoC rails"
SCOPE_PMIC = "SoC rails (PMIC)"


@dataclass(frozen=True)
class Rail:
    """One sampled power rail: its name and the files (or PMIC line names) its volts and amps come from."""

    name: str
    voltage: str  # a sysfs file in millivolts, or the PMIC's '<RAIL>_V' name
    current: str  # a sysfs file in milliamps, or the PMIC's '<RAIL>_A' name


@dataclass(frozen=True)
class Counter:
    """One usable energy counter, described by plain data so a worker process can open it again."""

    family: CounterFamily
    scope: str  # CPU package, GPU, SoC rails, SoC rails (PMIC)
    source: str  # how it is read, in words: 'RAPL (powercap sysfs)', 'NVML total energy'...
    detail: str = ""  # what exactly: the domains or rails
    files: tuple[str, ...] = ()  # RAPL: each package's energy_uj
    max_ranges: tuple[int, ...] = ()  # RAPL: each package's max_energy_range_uj (its wraparound point)
    rails: tuple[Rail, ...] = ()  # INA3221 and PMIC
    gpu_index: int = 0  # NVML
    command: tuple[str, ...] = ()  # PMIC: the vcgencmd command line
    resolution_j: float = 0.0  # the counter's own step: the smallest energy it can tell apart
    sample_interval_s: float = 0.0  # sampled families: how often the rails are read

    @property
    def sampled(self) -> bool:
        """Whether power is sampled and integrated (rails) rather than read from a cumulative counter."""
        return self.family in (CounterFamily.INA3221, CounterFamily.PMIC)

    def covers(self, device: str) -> bool:
        """Whether this counter's scope includes work on `device` ('cpu', 'cuda', 'cuda:0'...).

        SoC rails cover the whole module (CPU and GPU share them); a CPU package counter does not see a
        discrete GPU, and a GPU counter does not see the CPU.
        """
        on_gpu = device.startswith("cuda")
        if self.family is CounterFamily.NVML:
            return on_gpu
        if self.family is CounterFamily.RAPL:
            return not on_gpu
        return True


@dataclass(frozen=True)
class CounterProbe:
    """What the search for a counter found: the counter, or why there is none and what would make one readable."""

    counter: Counter | None = None
    reason: str = ""  # why no counter is usable ('' when there is one)
    fix: str = ""  # the admin change that makes an existing counter readable ('' when none would)
    notes: tuple[str, ...] = ()  # what each other family said


@dataclass(frozen=True)
class Reading:
    """Energy over one window: joules and seconds, or why the figure is not valid (never a negative energy)."""

    joules: float | None
    seconds: float
    reason: str = ""  # why `joules` is None (the counter went backwards, a read failed...)
    note: str = ""  # something a reader should know about a valid figure (a RAPL counter wrapped once)
    resolution_j: float = 0.0  # the counter's step over this window (a sampled source: one sample's energy)

    @property
    def valid(self) -> bool:
        """Whether `joules` is a figure."""
        return self.joules is not None

    @property
    def watts(self) -> float | None:
        """Mean power over the window, if valid."""
        return self.joules / self.seconds if self.joules is not None and self.seconds > 0 else None


class EnergyReadError(Exception):
    """A counter that was found could not be read (a file vanished, NVML refused, vcgencmd failed)."""
