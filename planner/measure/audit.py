"""The environment audit taken around each measurement, inside the measuring worker.

Other processes' CPU use is sampled while the model is timed, not read from the load average
(a one-minute mean that lags and counts this measurement itself), by the one /proc/stat load
sampler, `planner.hardware.load.LoadSampler` (the ceiling micro-benchmarks use it too): the
busy time of the CPUs this worker may run on, less this worker's own CPU time. Around that, the
machine facts of `planner.hardware.audit` (SMT, governor, clocks, throttling, power mode, GPU
clocks) are read at the start and the end.
"""

from __future__ import annotations

from pathlib import Path

from planner import units
from planner.hardware import audit as probes
from planner.hardware.cgroup import cpu_quota_cores, cpu_quota_to_threads
from planner.hardware.load import REAL_ROOT, LoadSampler
from planner.results.audit import NOT_READABLE, AuditFact, MeasurementAudit, judged


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
