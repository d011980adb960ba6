"""Other processes' CPU use during a measurement: the one /proc/stat load sampler.

The sampler reads the busy time of the CPUs this process may run on from /proc/stat every
`interval_s` and subtracts this process's own CPU time (its threads and its children); what is
left is CPU time other processes took from the measurement. The measuring worker's audit
(`planner.measure.audit`) and the ceiling micro-benchmarks (`planner.hardware.ceilings`) both
use it. It lives here, not in planner.measure, because planner.measure already imports
planner.hardware (the audit's machine probes): a sampler in measure would make the two
packages import each other.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from planner import units
from planner.hardware.audit import NOT_READABLE

REAL_ROOT = Path("/")
INTERVAL_S = 0.25
"""Sampling period: /proc/stat counts in 10 ms ticks, so a quarter second keeps one interval's error near 0.05 core."""

StatReader = Callable[[], dict[str, int] | None]
"""Returns busy ticks per /proc/stat line ('cpu', 'cpu0', ...), or None when /proc/stat cannot be read."""
OwnReader = Callable[[], float]
"""Returns this process's CPU time so far (its children's included), in seconds."""

_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal; steal is time another VM took


def read_proc_stat(root: Path = REAL_ROOT) -> dict[str, int] | None:
    """Busy ticks per CPU line of /proc/stat (steal included: a neighbouring VM's time is interference too)."""
    try:
        text = (root / "proc/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    busy: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *fields = line.split()
        try:
            values = [int(v) for v in fields]
        except ValueError:
            continue
        busy[name] = sum(values[i] for i in _BUSY_FIELDS if i < len(values))
    return busy or None


def own_cpu_seconds() -> float:
    """CPU time of this process (all its threads), its finished children and its running children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                continue
    except (ImportError, OSError):
        pass
    return total


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK")) or 100
    except (AttributeError, ValueError, OSError):
        return 100


def _affinity() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


@dataclass(frozen=True)
class LoadReading:
    """Other processes' CPU use over the sampled window, in cores (None when /proc/stat was unreadable)."""

    window_s: float
    samples: int
    other_mean: float | None
    other_peak: float | None
    own_mean: float | None
    basis: str


class LoadSampler:
    """Samples other processes' CPU use on this process's CPUs in a background thread between start() and stop()."""

    def __init__(self, *, cpus: list[int] | None = None, read_stat: StatReader | None = None,
                 read_own: OwnReader = own_cpu_seconds, clock: Callable[[], float] = time.monotonic,
                 interval_s: float = INTERVAL_S, ticks_per_s: int | None = None) -> None:
        self.cpus = cpus if cpus is not None else _affinity()
        self._read_stat = read_stat or read_proc_stat
        self._read_own = read_own
        self._clock = clock
        self._interval = interval_s
        self._hz = ticks_per_s or _clock_ticks()
        self._points: list[tuple[float, float, float]] = []  # (wall s, busy CPU s, own CPU s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lines: list[str] = []

    def _busy_seconds(self) -> float | None:
        stat = self._read_stat()
        if stat is None:
            return None
        if not self._lines:
            # Per-CPU lines for the CPUs this process may use; the total line when they are missing.
            wanted = [f"cpu{c}" for c in self.cpus]
            self._lines = wanted if all(name in stat for name in wanted) else ["cpu"]
        if not all(name in stat for name in self._lines):
            return None
        return sum(stat[name] for name in self._lines) / self._hz

    def sample(self) -> None:
        """Take one reading now (the thread calls this every interval)."""
        busy = self._busy_seconds()
        if busy is not None:
            self._points.append((self._clock(), busy, self._read_own()))

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def start(self) -> LoadSampler:
        """Take the first reading and start sampling in the background."""
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="planner-load-audit", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> LoadReading:
        """Stop sampling, take the last reading and sum the window up."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        points = self._points
        whole = "the total line" if self._lines == ["cpu"] else f"{len(self._lines)} CPU(s) this worker may use"
        basis = (f"/proc/stat busy time of {whole} minus this worker's own CPU time, "
                 f"sampled every {units.seconds(self._interval)}")
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return LoadReading(0.0, len(points), None, None, None,
                               f"{NOT_READABLE}: /proc/stat could not be read" if not points else
                               f"{NOT_READABLE}: the window was too short to sample")
        wall = points[-1][0] - points[0][0]
        other = (points[-1][1] - points[0][1]) - (points[-1][2] - points[0][2])
        peaks = []
        for (t0, b0, o0), (t1, b1, o1) in zip(points, points[1:], strict=False):
            # Intervals much shorter than the period (the last one) hold too few ticks to mean anything.
            if t1 - t0 >= self._interval * 0.5:
                peaks.append(max(0.0, ((b1 - b0) - (o1 - o0)) / (t1 - t0)))
        mean = max(0.0, other / wall)
        own = (points[-1][2] - points[0][2]) / wall
        return LoadReading(wall, len(points), mean, max(peaks) if peaks else mean, own, basis)
