"""What the planner's own process tree may use here, and how many workers or compiler processes fit in it.

A plan is a process tree: the planner, one measuring worker at a time (several while leaders are
confirmed in turns), and whatever a worker starts itself (torch.compile's compiler processes). On a
server none of that matters; on a 2-8 GB board, or in a container with a memory limit, the tree must
fit, or the kernel's out-of-memory killer ends a worker (or the planner) half-way through.

`PlanLimits` holds the memory the tree may use (the tightest cgroup limit, else the RAM) with what
is free of it now, and the cores it may use (affinity and CPU quota). `current_limits()` reads them
live; `limits_of(hw)` takes them from a HardwareProfile (a snapshot when it was detected, or a fake
one in tests). `fit_processes` says how many processes of a given size fit, and why no more.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner import units
from planner.errors import PlannerError
from planner.hardware import cgroup
from planner.hardware._files import REAL_ROOT, at, is_real_root, read_text

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile

MIB = 1 << 20

COMPILE_THREADS_VAR = "TORCHINDUCTOR_COMPILE_THREADS"
"""The variable inductor reads (when torch._inductor.config is imported) for how many kernels it compiles at
once: on the CPU that many C++ compiler processes, on a GPU that many Triton compile workers. Unset, it is
min(32, the CPUs in this process's affinity mask): 20 on a 20-core host even under a 2-core CPU quota."""

TORCH_WORKER_BYTES = 300 * MIB
"""A spawned worker's own memory once torch is imported, before any model: 281 MiB anonymous (private)
memory measured on x86-64 with torch 2.14.1+cu130 and Python 3.11 (its 433 MiB of mapped libraries are
page cache the planner's own torch already holds, so they are not counted again)."""

INDUCTOR_WORKER_BYTES = 250 * MIB
"""What torch.compile adds to a worker besides its compiler processes: dynamo, inductor and the compiled
graph. A worker compiling demo:inefficient (4.7 MB of weights) peaked at 507 MiB private memory, against
285 MiB for one that imported torch and ran a small model eagerly (x86-64, torch 2.14.1)."""

CPP_COMPILER_BYTES = 520 * MIB
"""One C++ compiler process building inductor's CPU kernels: cc1plus peaked at 515 MiB RSS building
inductor's precompiled header (once per machine) and at 261 MiB per kernel after it (x86-64, gcc 12,
torch 2.14.1, demo:inefficient; nearly all of it private)."""

TRITON_WORKER_BYTES = 700 * MIB
"""One Triton compile worker of inductor's GPU path: about 700 MB each, as an earlier developer saw them
on a GPU server (RSS). Not re-measured here (no GPU): idle pool workers started on a CPU host showed
380 MiB RSS but only 3 MiB private, being forks of the pool's first process, so this is an upper bound."""

SPARE_BYTES = 256 * MIB
"""Kept free beside the processes counted: the planner's own growth while a worker runs (results, the
reference outputs) and the kernel's page cache for the libraries every process maps."""


@dataclass(frozen=True)
class PlanLimits:
    """The memory and cores the planner's process tree may use.

    `memory_limit_bytes` caps the whole tree (a cgroup limit, else the RAM); `limit_source` says which
    ('cgroup v1', 'cgroup v2', 'RAM'). `available_bytes` is what may still be allocated now (None: not
    known); `cores` the cores this process may run on.
    """

    memory_limit_bytes: int | None
    limit_source: str
    available_bytes: int | None
    cores: int

    @property
    def cgroup_limited(self) -> bool:
        """Whether a cgroup (a container, a systemd unit) caps the memory below the RAM."""
        return self.limit_source.startswith("cgroup")

    def memory_text(self) -> str:
        """'a 3 GiB memory limit (cgroup v1)', or '24 GiB of RAM (no cgroup memory limit)'."""
        if self.memory_limit_bytes is None:
            return "an unknown amount of memory"
        if self.cgroup_limited:
            return f"a {units.size(self.memory_limit_bytes)} memory limit ({self.limit_source})"
        return f"{units.size(self.memory_limit_bytes)} of RAM (no cgroup memory limit)"

    def describe(self) -> str:
        """'a 3 GiB memory limit (cgroup v1), 2 usable cores'."""
        return f"{self.memory_text()}, {self.cores} usable core{'s' if self.cores != 1 else ''}"


def limits_of(hw: HardwareProfile) -> PlanLimits:
    """The limits a HardwareProfile recorded when it was detected (the tree has grown since on a real plan)."""
    memory = hw.memory
    limit, source = (memory.limit_bytes, memory.limit_source or "cgroup") if memory.limit_bytes is not None \
        else (memory.total_bytes, "RAM")
    return PlanLimits(memory_limit_bytes=limit, limit_source=source, available_bytes=memory.usable_bytes,
                      cores=max(1, int(hw.cpu.usable_cores)))


def _meminfo(root: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in (read_text(at(root, "/proc/meminfo")) or "").splitlines():
        match = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    return values


def usable_cores(root: Path = REAL_ROOT) -> int:
    """The cores this process may use now: its affinity mask, capped by a cgroup CPU quota (at least 1)."""
    if is_real_root(root):
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
    else:
        # A fixture tree describes another machine: its /proc/cpuinfo, not this host, has the cores.
        cores = len(re.findall(r"^processor\s*:", read_text(at(root, "/proc/cpuinfo")) or "", flags=re.MULTILINE))
    quota = cgroup.cpu_quota_cores(root)
    if quota is not None:
        cores = min(cores, cgroup.cpu_quota_to_threads(quota))
    return max(1, cores)


def current_limits(root: Path = REAL_ROOT) -> PlanLimits:
    """The limits now: the tightest cgroup memory limit (else the RAM) and what is free of it, and the cores.

    Free is the kernel's MemAvailable and, under a cgroup limit, no more than the limit less what the cgroup
    holds (its working set: usage less inactive page cache). A few small file reads: cheap enough to call
    before every worker starts.
    """
    meminfo = _meminfo(root)
    total = meminfo.get("MemTotal")
    available = meminfo.get("MemAvailable", meminfo.get("MemFree"))
    group = cgroup.memory_cgroup(root)
    if group is not None and (total is None or group.limit_bytes < total):
        in_use = cgroup.memory_in_use_bytes(group)
        if in_use is not None:
            headroom = max(0, group.limit_bytes - in_use)
            available = headroom if available is None else min(available, headroom)
        return PlanLimits(group.limit_bytes, group.source, available, usable_cores(root))
    return PlanLimits(total, "RAM", available, usable_cores(root))


@dataclass(frozen=True)
class Fit:
    """How many processes of one kind fit at once (0: not even one), and the sentence that says why no more.

    `by_memory` is True when the free memory, not the cores, set the count.
    """

    count: int
    reason: str
    by_memory: bool = False


def fit_processes(limits: PlanLimits, per_process_bytes: int, *, what: str, beside_bytes: int = 0,
                  beside: str = "", most: int | None = None) -> Fit:
    """How many processes of `per_process_bytes` fit in the free memory beside `beside_bytes` already needed.

    `most` caps the count (the cores, say). Unknown free memory fits `most` (else 1): nothing says it does
    not. The reason says what bounds the count: '2 usable cores', or the memory ('about 520 MiB per C++
    compiler process besides 800 MiB for the worker; 1.2 GiB available under a 2 GiB memory limit …').
    """
    if limits.available_bytes is None:
        return Fit(most or 1, "free memory not known")
    spare = limits.available_bytes - beside_bytes - SPARE_BYTES
    count = max(0, spare // per_process_bytes) if per_process_bytes > 0 else (most or 1)
    if most is not None and count >= most:
        return Fit(most, f"{most} usable core{'s' if most != 1 else ''}")
    need = f"about {units.size(per_process_bytes)} per {what}"
    if beside_bytes:
        need += f" besides {units.size(beside_bytes)} for {beside or 'what already runs'}"
    reason = (f"{need}; {units.size(limits.available_bytes)} available under {limits.memory_text()}, "
              f"{units.size(SPARE_BYTES)} of it kept spare")
    return Fit(int(count), reason, by_memory=True)


def size_text(value: int | None) -> str:
    """A byte count as the report writes it ('520 MiB', '1.5 GiB'), for plugins, which do not import units."""
    return units.size(value)


def max_concurrent_workers(limits: PlanLimits | HardwareProfile, per_worker_bytes: int) -> int:
    """How many measuring workers of `per_worker_bytes` each may be open at once (at least 1).

    For code that opens several workers together (leaders confirmed in turns): open at most this many,
    and time the rest in a later group. One is always allowed, since a plan that cannot open one worker
    cannot measure at all (and `check_model_fits` refuses the hopeless case before any worker starts).
    """
    if not isinstance(limits, PlanLimits):
        limits = limits_of(limits)
    return max(1, fit_processes(limits, per_worker_bytes, what="worker").count)


def torch_worker_bytes(weights_bytes: int | None, activation_bytes: int | None = None, *,
                       compiled: bool = False) -> int:
    """A torch worker's own memory: torch itself, the weights, the activations, and inductor when compiled."""
    total = TORCH_WORKER_BYTES + (weights_bytes or 0) + (activation_bytes or 0)
    return total + (INDUCTOR_WORKER_BYTES if compiled else 0)


def compile_fit(limits: PlanLimits, *, weights_bytes: int | None, activation_bytes: int | None = None,
                gpu: bool = False) -> Fit:
    """How many compiler processes torch.compile may run at once beside its worker (0: not even one fits).

    At most the usable cores: more compilers than cores only queue, each holding its memory.
    """
    worker = torch_worker_bytes(weights_bytes, activation_bytes, compiled=True)
    per, what = (TRITON_WORKER_BYTES, "Triton compile worker") if gpu else (CPP_COMPILER_BYTES,
                                                                           "C++ compiler process")
    fit = fit_processes(limits, per, what=what, beside_bytes=worker, beside="the worker", most=limits.cores)
    return Fit(fit.count, f"torch.compile needs {fit.reason}", by_memory=True) if fit.by_memory else fit


def compile_env(threads: int) -> dict[str, str]:
    """The worker variables that hold inductor to `threads` compiler processes at once (at least 1)."""
    return {COMPILE_THREADS_VAR: str(max(1, threads))}


def oom_kill_count(root: Path = REAL_ROOT) -> tuple[int, int] | None:
    """(OOM kills so far, memory limit) of the cgroup whose limit binds this process; None without one.

    Read before and after a worker: a rise means the out-of-memory killer ended a process of this cgroup.
    """
    group = cgroup.memory_cgroup(root)
    if group is None:
        return None
    kills = cgroup.oom_kills(group.version, group.directory)
    return (kills, group.limit_bytes) if kills is not None else None


def check_model_fits(model_bytes: int | None, limits: PlanLimits) -> None:
    """Refuse, before any worker starts, a model larger than the memory the planner may use at all.

    No worker could load it: each would be killed by the out-of-memory killer, one after another.
    """
    if not model_bytes or limits.memory_limit_bytes is None or model_bytes <= limits.memory_limit_bytes:
        return
    need = model_bytes + TORCH_WORKER_BYTES + SPARE_BYTES
    where = ("raise the container's or cgroup's memory limit (docker run --memory, systemd MemoryMax=) to at "
             if limits.cgroup_limited else "plan on a machine with at least ")
    raise PlannerError(
        f"the model's weights take {units.size(model_bytes)}, more than {limits.memory_text()} the planner "
        "runs under: no worker could load it, so none was started",
        f"{where}{units.size(need)} (the weights, a runtime and some spare), or plan a smaller or quantized "
        "model")


__all__ = ["COMPILE_THREADS_VAR", "CPP_COMPILER_BYTES", "Fit", "PlanLimits", "TRITON_WORKER_BYTES",
           "check_model_fits", "compile_env", "compile_fit", "current_limits", "fit_processes", "limits_of",
           "max_concurrent_workers", "oom_kill_count", "size_text", "torch_worker_bytes", "usable_cores"]
