"""The environment audit taken around each measurement, inside the measuring worker.

Other processes' CPU use is sampled while the model is timed, not read from the load average
(a one-minute mean that lags and counts this measurement itself): every `interval_s` the
sampler reads the busy time of the CPUs this worker may run on from /proc/stat and subtracts
this worker's own CPU time (its threads and its children). What is left is CPU time other
processes took from the measurement. Around that, the machine facts of `planner.hardware.audit`
(SMT, governor, clocks, throttling, power mode, GPU clocks) are read at the start and the end.
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
from planner.hardware import audit as probes
from planner.hardware.cgroup import cpu_quota_cores, cpu_quota_to_threads
from planner.results.audit import NOT_READABLE, AuditFact, MeasurementAudit, judged

REAL_ROOT = Path("/")
INTERVAL_S = 0.25
"""Sampling period: /proc/stat counts in 10 ms ticks, so a quarter second keeps one interval's error near 0.05 core."""

StatReader = Callable[[], dict[str, int] | None]
"""Returns busy ticks per /proc/stat line ('cpu', 'cpu0', ...), or None when /proc/stat cannot be read."""
OwnReader = Callable[[], float]
"""Returns this worker's CPU time so far, in seconds."""

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
    """Samples other processes' CPU use on this worker's CPUs in a background thread between start() and stop()."""

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
            # Per-CPU lines for the CPUs this worker may use; the total line when they are missing.
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


class Auditor:
    """One measurement's audit: machine facts at the start, load sampled during, facts again at the end."""

    def __init__(self, *, threads_used: int | None, gpu_index: int | None = None, root: Path = REAL_ROOT,
                 sampler: LoadSampler | None = None, run: probes.Runner = probes.run_tool,
                 gpu_module: object | None = None) -> None:
        self.threads_used = threads_used
        self.gpu_index = gpu_index
        self.root = root
        self.sampler = sampler or LoadSampler()
        self._run = run
        self._gpu_module = gpu_module
        self._throttles_before: int | None = None

    def start(self) -> Auditor:
        """Read the counters that are compared at the end, then start sampling the load."""
        self._throttles_before = probes.throttle_count(self.root, self.sampler.cpus)
        self.sampler.start()
        return self

    def finish(self) -> MeasurementAudit:
        """Stop sampling, read the machine facts and judge the measurement."""
        load = self.sampler.stop()
        cpus = self.sampler.cpus
        facts: list[AuditFact] = []
        throttling: list[str] = []

        quota = cpu_quota_cores(self.root)
        usable = len(cpus) if quota is None else min(len(cpus), cpu_quota_to_threads(quota))
        facts.append(AuditFact("CPUs this worker may use", f"{len(cpus)} (affinity)"
                               + (f"; CPU quota {units.sig(quota)} cores" if quota is not None else "; no CPU quota")))
        facts.append(AuditFact("threads used", str(self.threads_used) if self.threads_used else NOT_READABLE))
        facts.append(AuditFact("SMT (two threads per core)", probes.smt(self.root)))
        facts.append(AuditFact("frequency governor", probes.governor(self.root, cpus)))
        current, top = probes.clock_mhz(self.root, cpus)
        clock = f"{units.sig(current)} MHz now" + (f" of {units.sig(top)} MHz max" if top else "")
        facts.append(AuditFact("CPU clock", clock if current else f"{NOT_READABLE}: no cpufreq scaling_cur_freq"))

        after = probes.throttle_count(self.root, cpus)
        if after is None or self._throttles_before is None:
            facts.append(AuditFact("thermal throttle events", f"{NOT_READABLE}: no thermal_throttle counters"))
        else:
            events = after - self._throttles_before
            facts.append(AuditFact("thermal throttle events", f"{events} during this run"))
            if events > 0:
                throttling.append(f"{events} CPU thermal throttle events")
        zones = probes.thermal_zones(self.root)
        if zones:
            facts.append(AuditFact("thermal zones", "; ".join(
                f"{z.name} {z.temp_c:.0f} °C" for z in zones[:6])))
            throttling += probes.hot_zones(zones)
        else:
            facts.append(AuditFact("thermal zones", f"{NOT_READABLE}: no /sys/class/thermal zones"))
        pi = probes.pi_throttled(self._run)
        if pi is not None:
            raw, now, since = pi
            facts.append(AuditFact("Raspberry Pi throttling (vcgencmd)", raw + (
                f": now {', '.join(now)}" if now else "") + (f"; since boot {', '.join(since)}" if since else "")))
            throttling += [f"Raspberry Pi: {what}" for what in now]
        mode = probes.jetson_power_mode(self._run)
        if mode is not None:
            facts.append(AuditFact("Jetson power mode (nvpmodel)", mode))
        if self.gpu_index is not None:
            gpu = probes.gpu_clocks(self.gpu_index, self._gpu_module)
            if gpu is None:
                facts.append(AuditFact("GPU clocks", f"{NOT_READABLE}: NVML unavailable"))
            else:
                facts.append(AuditFact("GPU SM clock", (f"{gpu.sm_mhz} MHz" if gpu.sm_mhz else NOT_READABLE)
                                       + (f" of {gpu.max_sm_mhz} MHz max" if gpu.max_sm_mhz else "")))
                facts.append(AuditFact("GPU slow-down reasons", ", ".join(gpu.slowdowns) or gpu.note or "none"))
                throttling += [f"GPU {why}" for why in gpu.slowdowns]

        from planner.hardware.cpu import read_caches

        caches = read_caches(self.root)
        llc = max((size for name, size in caches.items() if not name.endswith("i")), default=None)
        return judged(MeasurementAudit(
            window_s=round(load.window_s, 3), load_samples=load.samples,
            other_load_mean_cores=_round(load.other_mean), other_load_peak_cores=_round(load.other_peak),
            own_cpu_cores=_round(load.own_mean), load_basis=load.basis, cpus_watched=len(cpus),
            threads_used=self.threads_used, usable_cores=usable, quota_cores=quota,
            throttling=tuple(throttling), llc_bytes=llc, facts=tuple(facts)))


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def with_weights(audit: MeasurementAudit, weights_bytes: int | None) -> MeasurementAudit:
    """The audit with the weights' size, so whether they fit the last-level cache can be read off it."""
    if not weights_bytes:
        return audit
    from dataclasses import replace

    return replace(audit, weights_bytes=int(weights_bytes))
