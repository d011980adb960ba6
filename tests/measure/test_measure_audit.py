"""The audit around each measurement: other processes' load sampled during the timing, and the machine facts.

A busy worker (a process burning a core during a real measurement of a tiny model) is flagged; an idle
machine (a fake /proc/stat whose busy time is all this worker's own) is not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planner.hardware.load import LoadSampler, read_proc_stat
from planner.measure.audit import Auditor, with_weights

HOUR = 3600.0  # a sampling period the background thread never reaches: the test takes every reading


class FakeMachine:
    """A fake /proc/stat, own-CPU reader and clock: each reading advances one period."""

    def __init__(self, *, other_cores: float, own_cores: float = 1.0, hz: int = 100) -> None:
        self.other, self.own, self.hz = other_cores, own_cores, hz
        self.t = 0.0

    def stat(self) -> dict[str, int]:
        busy = round((self.other + self.own) * self.t * self.hz / 2)  # spread over two CPUs
        return {"cpu": 2 * busy, "cpu0": busy, "cpu1": busy}

    def own_seconds(self) -> float:
        return self.own * self.t

    def clock(self) -> float:
        return self.t

    def sampler(self) -> LoadSampler:
        return LoadSampler(cpus=[0, 1], read_stat=self.stat, read_own=self.own_seconds, clock=self.clock,
                           interval_s=HOUR, ticks_per_s=self.hz)

    def run(self, sampler: LoadSampler, readings: int = 4) -> None:
        for _ in range(readings):
            self.t += HOUR
            sampler.sample()
        self.t += HOUR


def _audit(machine: FakeMachine, root: Path, **kwargs):
    auditor = Auditor(threads_used=kwargs.pop("threads", 2), root=root, sampler=machine.sampler(),
                      run=lambda argv: None, **kwargs).start()
    machine.run(auditor.sampler)
    return auditor.finish()


def test_idle_machine_shows_no_flag(tmp_path: Path) -> None:
    audit = _audit(FakeMachine(other_cores=0.0), tmp_path)
    assert audit.other_load_mean_cores == 0.0 and audit.own_cpu_cores == 1.0
    assert not audit.disturbed and audit.issues == ()
    assert audit.load_samples == 6 and audit.cpus_watched == 2


def test_other_load_from_a_fake_proc_stat_is_flagged(tmp_path: Path) -> None:
    audit = _audit(FakeMachine(other_cores=0.8), tmp_path)
    assert audit.other_load_mean_cores == pytest.approx(0.8, abs=0.01)
    assert audit.disturbed
    assert "other processes used 80% of a core" in audit.issues[0]
    assert "re-run on an idle machine" in audit.issues[0]


def test_probes_that_cannot_be_read_say_so(tmp_path: Path) -> None:
    facts = dict((f.name, f.value) for f in _audit(FakeMachine(other_cores=0.0), tmp_path).facts)
    for name in ("frequency governor", "CPU clock", "thermal throttle events", "thermal zones"):
        assert facts[name].startswith("not readable"), name
    assert facts["threads used"] == "2"


def test_a_hot_board_is_flagged_as_throttled(tmp_path: Path) -> None:
    zone = tmp_path / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    for name, text in (("type", "cpu-thermal"), ("temp", "90000"), ("trip_point_0_type", "passive"),
                       ("trip_point_0_temp", "85000")):
        (zone / name).write_text(text)
    audit = _audit(FakeMachine(other_cores=0.0), tmp_path)
    assert audit.throttling == ("cpu-thermal at 90 °C (throttles from 85 °C)",)
    assert audit.disturbed and "let it cool" in audit.issues[0]


def test_threads_beyond_the_cpu_quota_are_flagged(tmp_path: Path) -> None:
    (tmp_path / "sys/fs/cgroup").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cpu.max").write_text("100000 100000\n")
    audit = _audit(FakeMachine(other_cores=0.0), tmp_path, threads=2)
    assert audit.quota_cores == 1.0 and audit.usable_cores == 1
    assert audit.disturbed and "2 threads ran on 1 usable core" in audit.issues[0]


def test_unreadable_proc_stat_is_not_readable_not_zero(tmp_path: Path) -> None:
    sampler = LoadSampler(cpus=[0], read_stat=lambda: None, interval_s=HOUR)
    audit = Auditor(threads_used=1, root=tmp_path, sampler=sampler, run=lambda argv: None).start().finish()
    assert audit.other_load_mean_cores is None and audit.load_basis.startswith("not readable")
    assert not audit.disturbed


def test_weights_size_is_attached_for_the_cache_check(tmp_path: Path) -> None:
    audit = with_weights(_audit(FakeMachine(other_cores=0.0), tmp_path), 1 << 20)
    assert audit.weights_bytes == 1 << 20


def test_proc_stat_parses_busy_ticks(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/stat").write_text("cpu  10 1 5 100 7 2 3 4 0 0\ncpu0 10 1 5 100 7 2 3 4 0 0\nintr 5\n")
    # user + nice + system + irq + softirq + steal; idle and iowait are not busy.
    assert read_proc_stat(tmp_path) == {"cpu": 25, "cpu0": 25}
    assert read_proc_stat(tmp_path / "missing") is None


BURN = "import time\nend = time.time() + 120\nprint('burning', flush=True)\nwhile time.time() < end:\n    pass\n"


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc/stat")
def test_a_busy_worker_during_a_real_measurement_is_flagged() -> None:
    from planner.measure.evaluate import MeasureJob, run_job
    from planner.models import load_model
    from planner.plugins import ModelRef, get_plugin

    model = load_model("demo:tiny")
    # Started through a shell that exits at once, so the busy loop is another process, not a child of
    # this one: the audit counts its own children's CPU time as its own (a worker's helpers are).
    started = subprocess.run(["sh", "-c", '"$0" -c "$1" > /dev/null 2>&1 & echo $!', sys.executable, BURN],
                             capture_output=True, text=True, check=True)
    pid = int(started.stdout.strip())
    try:
        time.sleep(0.5)  # the interpreter has started and is spinning
        value = run_job(MeasureJob(model=ModelRef.of(model), spec=get_plugin("torch.eager").spec("cpu"), quick=True,
                                   fidelity_batches=1))
    finally:
        os.kill(pid, signal.SIGKILL)
    audit = value["audit"]
    assert audit.load_samples >= 2
    assert audit.other_load_mean_cores is not None and audit.other_load_mean_cores >= 0.25
    assert audit.disturbed and "re-run on an idle machine" in audit.issues[0]
