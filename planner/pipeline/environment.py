"""The versions and settings that affect the numbers, recorded with every run, and the memory and cores it
planned under, with the most memory its process tree took."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from planner import __version__
from planner.results import Environment
from planner.results.context import PlanResources


def environment() -> Environment:
    """Versions and settings that affect the numbers, now; and the plan's memory limit and cores.

    Starts (or restarts) the sampling of the planner's process tree, whose peak `finished_environment`
    adds when the plan finishes.
    """
    import importlib.metadata as md

    versions: dict[str, str | None] = {}
    for pkg in ("torch", "torchvision", "onnx", "onnxruntime", "openvino", "tensorrt", "numpy"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    variables = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
                                            "TORCHINDUCTOR_COMPILE_THREADS")
                 if os.environ.get(k)}
    return Environment(planner=__version__, python=platform.python_version(), platform=platform.platform(),
                       packages=versions, env=variables,
                       date=dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                       resources=start_resources())


@dataclass(frozen=True)
class _OwnCgroup:
    """The cgroup made for this plan (nothing else in it) and its OOM-kill count when the plan started."""

    version: int
    directory: Path
    oom_kills_at_start: int


# Module state: one plan runs in a process at a time, and a new plan's `environment()` starts afresh.
_own_cgroup: _OwnCgroup | None = None


def start_resources() -> PlanResources | None:
    """The memory limit and cores the plan starts under; starts the process tree's sampler from zero.

    None when they cannot be read (a probe failing must never stop a plan).
    """
    from planner.hardware import cgroup
    from planner.hardware._files import REAL_ROOT
    from planner.hardware.memory_limits import current_limits
    from planner.measure.tree_memory import plan_memory, tree_pids

    try:
        limits = current_limits()
    except (OSError, ValueError):
        return None
    global _own_cgroup
    plan_memory().restart_peak()
    _own_cgroup = None
    own = cgroup.own_memory_cgroup(REAL_ROOT)
    # The cgroup's counters describe this plan only when nothing but the planner is in it (a cgroup made for it).
    if own is not None and cgroup.member_pids(own[1]) <= set(tree_pids(os.getpid())):
        _own_cgroup = _OwnCgroup(own[0], own[1], cgroup.oom_kills(*own) or 0)
    return PlanResources(memory_limit_bytes=limits.memory_limit_bytes, limit_source=limits.limit_source,
                         available_bytes=limits.available_bytes, cores=limits.cores)


def finished_environment(env: Environment | None) -> Environment | None:
    """`env` with the process tree's peak memory so far (and its own cgroup's, where the plan has one).

    Call it when the plan finishes, before results.json is written for the last time; calling it again
    later records the peak up to then.
    """
    if env is None:
        return None
    from planner.hardware import cgroup
    from planner.measure.tree_memory import BASIS, plan_memory

    sampler = plan_memory()
    sampler.sample()  # the tree as it is now counts too, however recently the sampling began
    peak = sampler.peak
    resources = env.resources or PlanResources()
    resources = dataclasses.replace(resources, peak_bytes=peak.bytes if peak else None,
                                    peak_file_bytes=peak.file_bytes if peak else None,
                                    peak_processes=peak.processes if peak else None,
                                    peak_basis=BASIS if peak else "")
    own = _own_cgroup
    if own is not None:
        kills = cgroup.oom_kills(own.version, own.directory)
        resources = dataclasses.replace(
            resources, cgroup_peak_bytes=cgroup.memory_peak_bytes(own.version, own.directory),
            oom_kills=kills - own.oom_kills_at_start if kills is not None else None)
    return dataclasses.replace(env, resources=resources)
