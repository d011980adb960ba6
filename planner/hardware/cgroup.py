"""Container limits from cgroups (v2 and v1): the CPU quota and memory cap a process really gets."""

from __future__ import annotations

import math
from collections.abc import Iterator
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


def memory_limit_bytes(root: Path) -> int | None:
    """The tightest cgroup memory cap for this process, or None when there is none."""
    v2_path, v1_paths = self_cgroup_paths(root)
    limits: list[int] = []
    for directory in _walk_up(at(root, "/sys/fs/cgroup"), v2_path):
        text = read_text(directory / "memory.max")
        if text is not None and text.strip() != "max":
            try:
                limits.append(int(text.strip()))
            except ValueError:
                pass
    for mount in _V1_MEMORY_MOUNTS:
        for directory in _walk_up(at(root, f"/sys/fs/cgroup/{mount}"), v1_paths.get("memory")):
            value = read_int(directory / "memory.limit_in_bytes")
            if value is not None:
                limits.append(value)
    limits = [v for v in limits if 0 < v < _UNLIMITED_MEMORY]
    return min(limits) if limits else None
