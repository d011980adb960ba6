"""torch.compile candidates fit the machine they are planned on: inductor's compiler processes are capped to the
memory and cores, and when not even one fits beside the worker the candidates are skipped with the reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_plugin_helpers import fake_hw
from hardware_profiles import gpu_server, with_cpu, with_memory

from planner.hardware.memory_limits import COMPILE_THREADS_VAR
from planner.plugins import PlanContext
from targets.cpu.torch_cpu import TorchCpuPlugin

GIB = 1 << 30


def _small_board(available: float):
    """The 2-core container profile under a 2 GiB cgroup v1 limit with `available` GiB free."""
    return with_memory(fake_hw(), limit_bytes=2 * GIB, limit_source="cgroup v1", available_bytes=int(available * GIB))


@pytest.fixture
def compiler(monkeypatch):
    """A C compiler on PATH, whatever this machine has: the memory decides here."""
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/gcc")


def test_compile_candidates_carry_a_compile_process_cap(tiny, tmp_path: Path, compiler) -> None:
    specs = list(TorchCpuPlugin().candidates(PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path)))
    compiled = [s for s in specs if s.config["compile"]]
    assert compiled
    for spec in compiled:
        # 2 usable cores, and memory for more: the cores decide.
        assert spec.config["env"] == {COMPILE_THREADS_VAR: "2"}
        assert any("inductor builds at most 2 kernels at once" in note for note in spec.notes)
    assert all("env" not in s.config for s in specs if not s.config["compile"])


def test_a_board_without_room_for_a_compiler_gets_no_compile_candidates(tiny, tmp_path: Path, compiler) -> None:
    logged: list[str] = []
    ctx = PlanContext(hw=_small_board(1.2), model=tiny, workdir=tmp_path, log=logged.append)
    specs = list(TorchCpuPlugin().candidates(ctx))
    assert specs and not any(s.config["compile"] for s in specs)
    note = specs[0].notes[0]
    assert note.startswith("torch.compile candidates skipped: torch.compile needs about 520 MiB per C++ compiler "
                           "process besides ")
    assert "1.2 GiB available under a 2 GiB memory limit (cgroup v1)" in note
    assert note in logged


def test_room_for_one_compiler_means_one(tiny, tmp_path: Path, compiler) -> None:
    hw = with_cpu(_small_board(1.5), usable_cores=4, physical_cores=4)
    specs = list(TorchCpuPlugin().candidates(PlanContext(hw=hw, model=tiny, workdir=tmp_path)))
    assert {s.config["env"][COMPILE_THREADS_VAR] for s in specs if s.config["compile"]} == {"1"}


def test_gpu_compile_caps_its_triton_workers_and_says_when_none_fit(tiny, tmp_path: Path) -> None:
    from targets.nvidia.torch_compile import TorchCompilePlugin

    roomy = gpu_server()
    specs = list(TorchCompilePlugin().candidates(PlanContext(hw=roomy, model=tiny, workdir=tmp_path, quick=True)))
    workers = {int(s.config["env"][COMPILE_THREADS_VAR]) for s in specs}
    assert len(workers) == 1 and 1 <= workers.pop() <= roomy.cpu.usable_cores
    tight = with_memory(roomy, limit_bytes=2 * GIB, limit_source="cgroup v2", available_bytes=GIB)
    reasons = TorchCompilePlugin().check(tight, tiny)
    assert any(r.startswith("torch.compile needs about 700 MiB per Triton compile worker") for r in reasons)
    assert not any("Triton compile worker" in r for r in TorchCompilePlugin().check(roomy, tiny))
