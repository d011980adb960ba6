"""Container limits from cgroups (v2 and v1): the CPU quota and memory cap a process really gets."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from planner.hardware._files import at, read_int, read_text

# cgroup v1 reports "no memory limit" as a page-rounded LONG_MAX; anything this large is no limit.
_UNLIMITED_MEMORY = 1 << 60
_V1_CPU_MOUNTS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
_V1_MEMORY_MOUNTS = ("memory",)


def self_cgroup_paths(root: Path) -> tuple[str | None, dict[str, str]]:
    """The v2 cgroup path and the v1 controller → path map from `/proc/self/cgroup`."""
    text = read_text(at(root, "/proc/self/cgroup")) or ""
    v2: str | None = None
    v1: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            v2 = path
        else:
            for controller in controllers.split(","):
                v1[controller] = path
    return v2, v1


def _walk_up(base: Path, relative: str | None) -> Iterator[Path]:
    """`base/relative` and each parent up to `base`, for the directories that exist.

    Limits are inherited, so the tightest one can sit at any level; and inside a container the
    path in /proc/self/cgroup often does not exist under the namespaced mount, so `base` is always tried.
    """
    seen: set[Path] = set()
    if relative:
        current = base / relative.strip("/")
        while True:
            if current not in seen and current.is_dir():
                seen.add(current)
                yield current
            if current == base or base not in current.parents:
                break
            current = current.parent
    if base not in seen and base.is_dir():
        yield base


def _parse_cpu_max(text: str) -> float | None:
    """Cores allowed by a v2 `cpu.max` line ('max 100000' or 'QUOTA PERIOD'); None when unlimited."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100_000
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return quota / period


def cpu_quota_cores(root: Path) -> float | None:
    """The tightest CPU quota (in cores, possibly fractional) of this process's cgroups, or None."""
    v2_path, v1_paths = self_cgroup_paths(root)
    limits: list[float] = []
    for directory in _walk_up(at(root, "/sys/fs/cgroup"), v2_path):
        text = read_text(directory / "cpu.max")
        if text is not None:
            cores = _parse_cpu_max(text)
            if cores is not None:
                limits.append(cores)
    for mount in _V1_CPU_MOUNTS:
        for directory in _walk_up(at(root, f"/sys/fs/cgroup/{mount}"), v1_paths.get("cpu")):
            quota = read_int(directory / "cpu.cfs_quota_us")
            period = read_int(directory / "cpu.cfs_period_us")
            if quota is not None and period and quota > 0 and period > 0:
                limits.append(quota / period)
    return min(limits) if limits else None


def cpu_quota_to_threads(cores: float) -> int:
    """Whole threads worth running under a fractional quota.

    Rounded down (at least 1): a thread pool one larger than the quota gets throttled every period,
    which costs more than the idle fraction of a core it would have used.
    """
    return max(1, math.floor(cores + 1e-9))


@dataclass(frozen=True)
class MemoryCgroup:
    """The cgroup whose memory limit binds this process: its limit, its cgroup version and its folder."""

    limit_bytes: int
    version: int  # 1 or 2
    directory: Path

    @property
    def source(self) -> str:
        """Where the limit comes from, in words: 'cgroup v1' or 'cgroup v2'."""
        return f"cgroup v{self.version}"


def _memory_cgroups(root: Path) -> Iterator[tuple[int, Path]]:
    """(version, folder) of every memory cgroup above this process, v2 first, innermost first."""
    v2_path, v1_paths = self_cgroup_paths(root)
    for directory in _walk_up(at(root, "/sys/fs/cgroup"), v2_path):
        yield 2, directory
    for mount in _V1_MEMORY_MOUNTS:
        for directory in _walk_up(at(root, f"/sys/fs/cgroup/{mount}"), v1_paths.get("memory")):
            yield 1, directory


def _limit_in(version: int, directory: Path) -> int | None:
    """The memory limit set in one cgroup folder, or None when it sets none (or it is 'no limit')."""
    if version == 2:
        text = read_text(directory / "memory.max")
        if text is None or text.strip() == "max":
            return None
        try:
            value = int(text.strip())
        except ValueError:
            return None
    else:
        found = read_int(directory / "memory.limit_in_bytes")
        if found is None:
            return None
        value = found
    return value if 0 < value < _UNLIMITED_MEMORY else None


def memory_cgroup(root: Path) -> MemoryCgroup | None:
    """The cgroup with the tightest memory cap over this process (limits are inherited), or None without one."""
    tightest: MemoryCgroup | None = None
    for version, directory in _memory_cgroups(root):
        limit = _limit_in(version, directory)
        if limit is not None and (tightest is None or limit < tightest.limit_bytes):
            tightest = MemoryCgroup(limit, version, directory)
    return tightest


def memory_limit_bytes(root: Path) -> int | None:
    """The tightest cgroup memory cap for this process, or None when there is none."""
    group = memory_cgroup(root)
    return group.limit_bytes if group is not None else None


def _stat(directory: Path) -> dict[str, int]:
    """A cgroup's memory.stat as name → value."""
    values: dict[str, int] = {}
    for line in (read_text(directory / "memory.stat") or "").splitlines():
        name, _, value = line.partition(" ")
        try:
            values[name] = int(value)
        except ValueError:
            continue
    return values


def memory_in_use_bytes(group: MemoryCgroup) -> int | None:
    """What the cgroup holds now that the kernel cannot simply drop: its usage less its inactive file cache.

    The working set, as container runtimes count it: usage alone includes page cache that the kernel
    reclaims before it kills anything, so the limit minus usage would understate what is free.
    """
    if group.version == 2:
        usage = read_int(group.directory / "memory.current")
        inactive = _stat(group.directory).get("inactive_file", 0)
    else:
        usage = read_int(group.directory / "memory.usage_in_bytes")
        stat = _stat(group.directory)
        inactive = stat.get("total_inactive_file", stat.get("inactive_file", 0))
    if usage is None:
        return None
    return max(0, usage - inactive)


def memory_peak_bytes(version: int, directory: Path) -> int | None:
    """The most the cgroup has held since it was made (v1 memory.max_usage_in_bytes, v2 memory.peak), page
    cache included; None where the kernel does not keep it (v2 before Linux 5.19)."""
    name = "memory.peak" if version == 2 else "memory.max_usage_in_bytes"
    return read_int(directory / name)


def oom_kills(version: int, directory: Path) -> int | None:
    """How many processes the out-of-memory killer has killed in this cgroup (None where not counted).

    v2 counts them in memory.events, v1 (Linux 4.13 on) in memory.oom_control.
    """
    name = "memory.events" if version == 2 else "memory.oom_control"
    for line in (read_text(directory / name) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def own_memory_cgroup(root: Path) -> tuple[int, Path] | None:
    """(version, folder) of the innermost memory cgroup this process is in, where its folder can be read."""
    for version, directory in _memory_cgroups(root):
        if (directory / ("memory.current" if version == 2 else "memory.usage_in_bytes")).exists():
            return version, directory
    return None


def member_pids(directory: Path) -> set[int]:
    """The processes in one cgroup folder (its cgroup.procs; not those of the cgroups below it)."""
    pids: set[int] = set()
    for line in (read_text(directory / "cgroup.procs") or "").split():
        if line.isdigit():
            pids.add(int(line))
    return pids
