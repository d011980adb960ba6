"""The memory and cores the planner's process tree may use: cgroup v1 and v2 limits, what is free of them, and how
many workers or compiler processes fit (planner.hardware.memory_limits)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hardware_fake_nvml import GIB
from hardware_trees import write

from planner.errors import PlannerError
from planner.hardware import cgroup, detect
from planner.hardware.memory_limits import (
    CPP_COMPILER_BYTES,
    PlanLimits,
    check_model_fits,
    compile_fit,
    current_limits,
    fit_processes,
    limits_of,
    max_concurrent_workers,
    oom_kill_count,
)

MIB = 1 << 20


def _v1_board(editable_root, *, limit: int = 2 * GIB, usage: int = 600 * MIB, inactive: int = 100 * MIB) -> Path:
    """The Raspberry Pi 5 tree (8 GB, 4 cores) with the planner in a cgroup v1 memory cgroup `plan`."""
    root = editable_root("rpi5")
    write(root, "/proc/self/cgroup", "4:memory:/plan\n3:cpuset:/\n0::/\n")
    write(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    write(root, "/sys/fs/cgroup/memory/plan/memory.limit_in_bytes", f"{limit}\n")
    write(root, "/sys/fs/cgroup/memory/plan/memory.usage_in_bytes", f"{usage}\n")
    write(root, "/sys/fs/cgroup/memory/plan/memory.max_usage_in_bytes", f"{usage + 300 * MIB}\n")
    write(root, "/sys/fs/cgroup/memory/plan/memory.stat",
          f"cache 200000000\nrss 400000000\ninactive_file 1\ntotal_inactive_file {inactive}\n")
    write(root, "/sys/fs/cgroup/memory/plan/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    return root


def _v2_board(editable_root, *, tree: str = "rpi5", limit: int = 2 * GIB, current: int = 700 * MIB,
              inactive: int = 200 * MIB) -> Path:
    """A Raspberry Pi tree with the planner in a cgroup v2 group `user.slice/plan`."""
    root = editable_root(tree)
    write(root, "/proc/self/cgroup", "0::/user.slice/plan\n")
    write(root, "/sys/fs/cgroup/user.slice/memory.max", "max\n")
    write(root, "/sys/fs/cgroup/user.slice/plan/memory.max", f"{limit}\n")
    write(root, "/sys/fs/cgroup/user.slice/plan/memory.current", f"{current}\n")
    write(root, "/sys/fs/cgroup/user.slice/plan/memory.peak", f"{current + 100 * MIB}\n")
    write(root, "/sys/fs/cgroup/user.slice/plan/memory.stat", f"anon 400000000\ninactive_file {inactive}\n")
    write(root, "/sys/fs/cgroup/user.slice/plan/memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
    return root


def test_a_cgroup_v1_limit_is_read_with_what_is_free_of_it(editable_root) -> None:
    root = _v1_board(editable_root)
    group = cgroup.memory_cgroup(root)
    assert group is not None and group.limit_bytes == 2 * GIB and group.source == "cgroup v1"
    # The working set: usage less the inactive page cache the kernel would drop first.
    assert cgroup.memory_in_use_bytes(group) == 500 * MIB
    limits = current_limits(root)
    assert limits == PlanLimits(2 * GIB, "cgroup v1", 2 * GIB - 500 * MIB, 4)
    assert limits.describe() == "a 2 GiB memory limit (cgroup v1), 4 usable cores"
    memory = detect(root=root).memory
    assert (memory.limit_bytes, memory.limit_source, memory.available_bytes) == (2 * GIB, "cgroup v1",
                                                                                2 * GIB - 500 * MIB)
    assert memory.usable_bytes == 2 * GIB - 500 * MIB


def test_a_cgroup_v2_limit_is_read_with_what_is_free_of_it(editable_root) -> None:
    root = _v2_board(editable_root)
    limits = current_limits(root)
    assert (limits.memory_limit_bytes, limits.limit_source, limits.available_bytes) == (2 * GIB, "cgroup v2",
                                                                                       2 * GIB - 500 * MIB)
    assert detect(root=root).memory.limit_source == "cgroup v2"
    assert limits_of(detect(root=root)).describe() == "a 2 GiB memory limit (cgroup v2), 4 usable cores"


def test_the_kernel_counters_of_a_cgroup(editable_root) -> None:
    v1, v2 = _v1_board(editable_root), _v2_board(editable_root, tree="rpi4")
    assert cgroup.memory_peak_bytes(1, v1 / "sys/fs/cgroup/memory/plan") == 900 * MIB
    assert cgroup.oom_kills(1, v1 / "sys/fs/cgroup/memory/plan") == 2
    assert cgroup.memory_peak_bytes(2, v2 / "sys/fs/cgroup/user.slice/plan") == 800 * MIB
    assert cgroup.oom_kills(2, v2 / "sys/fs/cgroup/user.slice/plan") == 1
    assert oom_kill_count(v2) == (1, 2 * GIB)
    assert cgroup.own_memory_cgroup(v1) == (1, v1 / "sys/fs/cgroup/memory/plan")


def test_without_a_cgroup_limit_the_ram_is_the_limit(fixture_root) -> None:
    limits = current_limits(fixture_root("rpi5"))
    assert limits.limit_source == "RAM" and not limits.cgroup_limited
    assert limits.memory_limit_bytes == 8245360 * 1024
    assert limits.describe() == "7.86 GiB of RAM (no cgroup memory limit), 4 usable cores"


def test_a_model_larger_than_the_limit_is_refused_naming_both() -> None:
    limits = PlanLimits(2 * GIB, "cgroup v1", int(1.5 * GIB), 2)
    with pytest.raises(PlannerError) as raised:
        check_model_fits(int(2.5 * GIB), limits)
    error = raised.value
    assert "2.5 GiB" in error.problem and "a 2 GiB memory limit (cgroup v1)" in error.problem
    assert "none was started" in error.problem
    assert "raise the container's or cgroup's memory limit" in error.fix
    check_model_fits(int(1.9 * GIB), limits)  # smaller than the limit: measuring decides the rest
    check_model_fits(None, limits)


def test_torch_compile_is_capped_by_memory_then_by_cores() -> None:
    roomy = PlanLimits(8 * GIB, "RAM", 6 * GIB, 4)
    fit = compile_fit(roomy, weights_bytes=5 * MIB)
    assert (fit.count, fit.reason, fit.by_memory) == (4, "4 usable cores", False)
    tight = PlanLimits(2 * GIB, "cgroup v1", int(1.2 * GIB), 4)
    fit = compile_fit(tight, weights_bytes=5 * MIB)
    assert fit.count == 0 and fit.by_memory
    assert fit.reason.startswith("torch.compile needs about 520 MiB per C++ compiler process besides ")
    assert "1.2 GiB available under a 2 GiB memory limit (cgroup v1)" in fit.reason
    # A Triton worker (the GPU path) is counted at its own size.
    gpu = compile_fit(PlanLimits(4 * GIB, "cgroup v2", 3 * GIB, 16), weights_bytes=5 * MIB, gpu=True)
    assert 1 <= gpu.count < 16 and "Triton compile worker" in gpu.reason


def test_how_many_workers_fit_at_once() -> None:
    limits = PlanLimits(3 * GIB, "cgroup v1", int(2.5 * GIB), 2)
    assert max_concurrent_workers(limits, 700 * MIB) == 3
    assert max_concurrent_workers(limits, 3 * GIB) == 1  # one is always allowed: else nothing is measured
    assert fit_processes(limits, 3 * GIB, what="worker").count == 0
    unknown = dataclasses.replace(limits, available_bytes=None)
    assert fit_processes(unknown, CPP_COMPILER_BYTES, what="compiler", most=2).count == 2
