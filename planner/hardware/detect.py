"""detect(): run every hardware probe in isolation and assemble a HardwareProfile."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from planner.hardware import cgroup
from planner.hardware._files import REAL_ROOT, at, is_real_root, read_text
from planner.hardware.arm import (
    BoardInfo,
    BoardKind,
    jetson_integrated_gpu,
    probe_board,
)
from planner.hardware.cpu import CpuInfoText, probe_cpu
from planner.hardware.nvml import NvmlProbe, probe_gpus
from planner.hardware.profile import (
    CpuInfo,
    DeviceClass,
    GpuInfo,
    HardwareProfile,
    MemoryInfo,
)

T = TypeVar("T")

_DATACENTER_GPU = re.compile(
    r"\b(A100|A800|A10G?|A16|A2|A30|A40|H100|H200|H800|H20|GH200|GB200|GB300|B100|B200|B300|"
    r"L4|L20|L40S?|T4|V100|P100|P40|P4|K80|M60|M40)\b|Tesla|DGX|HGX",
    re.IGNORECASE,
)
_SERVER_X86 = re.compile(r"Xeon|EPYC|Opteron|Server", re.IGNORECASE)
_SERVER_ARM = re.compile(r"Neoverse|Graviton|Ampere|Altra|A64FX|TaiShan|Kunpeng|Amazon EC2", re.IGNORECASE)


def is_datacenter_gpu(name: str) -> bool:
    """True for NVIDIA's datacenter parts (A100, H100, L4, T4, Tesla …) by marketing name."""
    return bool(_DATACENTER_GPU.search(name))


def classify(cpu: CpuInfo, gpus: tuple[GpuInfo, ...], board: BoardInfo) -> DeviceClass:
    """The device class: Jetson, then a discrete GPU, then Raspberry Pi, then ARM or x86 server vs desktop."""
    if board.kind is BoardKind.JETSON:
        return DeviceClass.JETSON
    discrete = [g for g in gpus if not g.integrated]
    if discrete:
        if any(is_datacenter_gpu(g.name) for g in discrete):
            return DeviceClass.DATACENTER_GPU
        return DeviceClass.DESKTOP_GPU
    if board.kind is BoardKind.RASPBERRY_PI:
        return DeviceClass.RASPBERRY_PI
    if cpu.is_arm:
        identity = " ".join(filter(None, (cpu.vendor, cpu.model, board.name)))
        return DeviceClass.CPU_SERVER if _SERVER_ARM.search(identity) else DeviceClass.ARM_BOARD
    return DeviceClass.CPU_SERVER if _SERVER_X86.search(cpu.model) else DeviceClass.DESKTOP_CPU


def _isolated(notes: list[tuple[str, str]], probe: str, run: Callable[[], T], fallback: Callable[[], T]) -> T:
    """`run()`, or `fallback()` with a note when the probe raises: one broken probe must not fail detection."""
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - probes read firmware files and drivers that can fail in any way
        notes.append((probe, f"probe failed: {type(exc).__name__}: {exc}"))
        return fallback()


def _meminfo(root: Path) -> tuple[int | None, int | None]:
    """MemTotal and MemAvailable (bytes) from /proc/meminfo under `root`."""
    text = read_text(at(root, "/proc/meminfo")) or ""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    return values.get("MemTotal"), values.get("MemAvailable", values.get("MemFree"))


def probe_memory(root: Path, notes: list[tuple[str, str]]) -> MemoryInfo:
    """Total and available memory (psutil on the real machine, /proc/meminfo otherwise) and any cgroup cap."""
    total = available = None
    if is_real_root(root):
        try:
            import psutil

            vm = psutil.virtual_memory()
            total, available = int(vm.total), int(vm.available)
        except (ImportError, OSError, RuntimeError) as exc:
            notes.append(("memory.psutil", f"psutil failed ({exc}); reading /proc/meminfo"))
    if total is None:
        total, available = _meminfo(root)
    if total is None:
        notes.append(("memory", f"cannot read MemTotal from {at(root, '/proc/meminfo')}"))
    group = cgroup.memory_cgroup(root)
    if group is None or (total is not None and group.limit_bytes >= total):
        return MemoryInfo(total_bytes=total, available_bytes=available)
    # MemAvailable is the whole machine's: inside a cgroup only the limit less what the cgroup holds is free.
    in_use = cgroup.memory_in_use_bytes(group)
    if in_use is not None:
        headroom = max(0, group.limit_bytes - in_use)
        available = headroom if available is None else min(available, headroom)
    return MemoryInfo(total_bytes=total, available_bytes=available, limit_bytes=group.limit_bytes,
                      limit_source=group.source)


def _os_text(root: Path) -> str:
    """The platform string for the real machine; the os-release name for a fixture tree."""
    if is_real_root(root):
        return platform.platform()
    text = read_text(at(root, "/etc/os-release")) or ""
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, flags=re.MULTILINE)
    return match.group(1) if match else "unknown"


def _torch_version(notes: list[tuple[str, str]]) -> str | None:
    """torch's installed version, read from package metadata so detection does not pay for importing torch."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        notes.append(("torch", "torch is not installed"))
        return None


def _fallback_cpu(root: Path) -> tuple[CpuInfo, CpuInfoText, tuple[tuple[str, str], ...]]:
    """A minimal CpuInfo when the CPU probe itself crashed."""
    real = is_real_root(root)
    cores = (os.cpu_count() or 1) if real else 1
    cpu = CpuInfo(vendor="unknown", model="unknown CPU", architecture=platform.machine() if real else "unknown",
                  physical_cores=None, logical_cores=cores, usable_cores=cores)
    return cpu, CpuInfoText(processors=()), ()


def detect(*, root: Path = REAL_ROOT, nvml_module: Any | None = None) -> HardwareProfile:
    """Probe the machine (or the fake tree at `root`) and return its HardwareProfile; never raises for a probe."""
    root = Path(root)
    notes: list[tuple[str, str]] = []

    cpu, cpuinfo, cpu_notes = _isolated(notes, "cpu", lambda: probe_cpu(root), lambda: _fallback_cpu(root))
    notes.extend(cpu_notes)
    memory = _isolated(notes, "memory", lambda: probe_memory(root, notes),
                       lambda: MemoryInfo(total_bytes=None, available_bytes=None))
    board = _isolated(notes, "board", lambda: probe_board(root, cpuinfo), lambda: BoardInfo(kind=BoardKind.OTHER))

    if nvml_module is None and not is_real_root(root):
        # A fixture tree describes another machine: this host's real GPUs would be wrong for it.
        reason = f"not probed: {root} is a fixture tree and no NVML module was given"
        nvml = NvmlProbe(gpus=(), notes=(("nvml", reason), ("gpu", f"no NVIDIA GPU: {reason}")))
    else:
        nvml = _isolated(notes, "nvml", lambda: probe_gpus(nvml_module),
                         lambda: NvmlProbe(gpus=(), notes=(("gpu", "no NVIDIA GPU: the NVML probe crashed"),)))
    gpus = nvml.gpus
    nvml_notes = list(nvml.notes)
    if not gpus:
        integrated = jetson_integrated_gpu(board, memory.total_bytes)
        if integrated is not None:
            gpus = (integrated,)
            nvml_notes = [(p, r) for p, r in nvml_notes if p != "gpu"]
            nvml_notes.append(("gpu.source", f"Jetson integrated GPU from the SoC table ({board.soc} → cc "
                                             f"{integrated.cc_text}); NVML does not report it; memory is shared RAM"))
        elif board.kind is BoardKind.JETSON:
            nvml_notes.append(("gpu.jetson", f"Jetson SoC {board.soc or 'unknown'} is not in the SoC table"))
    notes.extend(nvml_notes)

    return HardwareProfile(
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        device_class=classify(cpu, gpus, board),
        board=board.name,
        soc=board.soc,
        driver_version=nvml.driver_version,
        cuda_version=nvml.cuda_version,
        os=_os_text(root),
        python_version=platform.python_version(),
        torch_version=_torch_version(notes),
        probe_notes=tuple(notes),
    )
