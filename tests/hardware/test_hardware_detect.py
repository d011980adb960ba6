"""detect() on fake root trees: the device class, board, features and core counts a user would see."""

from __future__ import annotations

import importlib
import os
import platform
from pathlib import Path

import pytest
from hardware_fake_nvml import FakeNvml, NVMLError_DriverNotLoaded, a100, rtx4090
from hardware_trees import write

from planner.hardware import DeviceClass, HardwareProfile, detect

# The package re-exports the function `detect`, which shadows the submodule attribute of the same name.
detect_module = importlib.import_module("planner.hardware.detect")
GIB = 1 << 30


def test_raspberry_pi_4(fixture_root) -> None:
    """A Pi 4 is a Raspberry Pi with four Cortex-A72 cores, NEON but no dot-product."""
    hw = detect(root=fixture_root("rpi4"))
    assert hw.device_class is DeviceClass.RASPBERRY_PI
    assert hw.board == "Raspberry Pi 4 Model B Rev 1.4"
    assert hw.soc == "BCM2711"
    assert hw.cpu.model == "ARM Cortex-A72"
    assert hw.cpu.architecture == "aarch64"
    assert (hw.cpu.physical_cores, hw.cpu.logical_cores, hw.cpu.usable_cores) == (4, 4, 4)
    assert hw.cpu.has("neon")
    assert not hw.cpu.has("asimddp") and not hw.cpu.has_int8_dot
    assert hw.cpu.max_mhz == 1800.0
    assert hw.cpu.caches == {"L1d": 32 * 1024, "L1i": 48 * 1024, "L2": 1024 * 1024}
    assert hw.memory.total_bytes == 7998044 * 1024
    assert hw.os == "Debian GNU/Linux 12 (bookworm)"
    assert hw.gpus == ()


def test_raspberry_pi_5(fixture_root) -> None:
    """A Pi 5 has Cortex-A76 cores with the dot-product instructions but no i8mm or bf16."""
    hw = detect(root=fixture_root("rpi5"))
    assert hw.device_class is DeviceClass.RASPBERRY_PI
    assert hw.board == "Raspberry Pi 5 Model B Rev 1.0"
    assert hw.soc == "BCM2712"
    assert hw.cpu.model == "ARM Cortex-A76"
    assert hw.cpu.arm_implementer == "0x41" and hw.cpu.arm_part == "0xd0b"
    assert hw.cpu.has("asimddp") and hw.cpu.has("neon")
    assert not hw.cpu.has("i8mm") and not hw.cpu.has_bf16 and not hw.cpu.has("sve")
    assert hw.cpu.caches["L3"] == 2 * 1024 * 1024


def test_jetson_agx_orin(fixture_root) -> None:
    """A Jetson AGX Orin is named with its L4T release and has an integrated Ampere GPU NVML cannot see."""
    hw = detect(root=fixture_root("jetson_agx_orin"))
    assert hw.device_class is DeviceClass.JETSON
    assert hw.board == "NVIDIA Jetson AGX Orin Developer Kit (L4T R36.3.0)"
    assert hw.soc == "tegra234"
    assert hw.cpu.model == "ARM Cortex-A78AE"
    assert hw.cpu.logical_cores == 12 and hw.cpu.usable_cores == 12
    assert hw.has_cuda_gpu
    gpu = hw.gpus[0]
    assert gpu.integrated and gpu.compute_capability == (8, 7)
    assert gpu.tensor_core_generation == "Ampere (3rd gen)"
    assert gpu.memory_total_bytes == hw.memory.total_bytes
    assert "SoC table" in (hw.note("gpu.source") or "")
    assert hw.note("gpu") is None


def test_jetson_without_device_tree_model(editable_root) -> None:
    """With only /etc/nv_tegra_release, the board is still a Jetson and carries the release."""
    root = editable_root("jetson_agx_orin")
    (root / "proc/device-tree/model").unlink()
    (root / "proc/device-tree/compatible").unlink()
    hw = detect(root=root)
    assert hw.device_class is DeviceClass.JETSON
    assert hw.board == "NVIDIA Jetson (L4T R36.3.0)"


def test_graviton3(fixture_root) -> None:
    """Graviton3 is a Neoverse-V1 CPU server with SVE, bf16 and i8mm."""
    hw = detect(root=fixture_root("graviton3"))
    assert hw.device_class is DeviceClass.CPU_SERVER
    assert hw.cpu.model == "ARM Neoverse-V1"
    assert hw.board == "Amazon EC2 c7g.xlarge"
    for feature in ("neon", "asimddp", "i8mm", "sve", "bf16"):
        assert hw.cpu.has(feature), feature
    assert hw.cpu.has_bf16 and hw.cpu.has_int8_dot
    assert hw.cpu.logical_cores == 4


def test_xeon_sapphire_rapids(fixture_root) -> None:
    """Sapphire Rapids reports AMX, AVX512-BF16 and VNNI, and 2 physical cores behind 4 threads."""
    hw = detect(root=fixture_root("xeon_sapphire_rapids"))
    assert hw.device_class is DeviceClass.CPU_SERVER
    assert hw.cpu.vendor == "Intel"
    assert hw.cpu.model == "Intel(R) Xeon(R) Platinum 8488C"
    assert hw.cpu.architecture == "x86_64"
    for feature in ("amx_tile", "amx_int8", "amx_bf16", "avx512_bf16", "avx512_vnni", "avx512f", "avx2", "fma"):
        assert hw.cpu.has(feature), feature
    assert hw.cpu.has_amx and hw.cpu.has_bf16 and hw.cpu.has_avx512
    assert (hw.cpu.physical_cores, hw.cpu.logical_cores) == (2, 4)
    assert hw.cpu.caches["L3"] == 107520 * 1024
    # Irrelevant flags are not carried into the profile.
    assert "sse2" not in hw.cpu.features


def test_epyc_zen3(fixture_root) -> None:
    """Zen 3 EPYC has AVX2 and FMA but no AVX-512, VNNI or bf16."""
    hw = detect(root=fixture_root("epyc_zen3"))
    assert hw.device_class is DeviceClass.CPU_SERVER
    assert hw.cpu.vendor == "AMD"
    assert hw.cpu.has("avx2") and hw.cpu.has("fma") and hw.cpu.has("f16c")
    assert not hw.cpu.has_avx512 and not hw.cpu.has_bf16 and not hw.cpu.has_int8_dot
    assert (hw.cpu.physical_cores, hw.cpu.logical_cores, hw.cpu.usable_cores) == (4, 8, 8)
    assert hw.memory.limit_bytes is None


def test_cgroup_v2_quota_limits_usable_cores(fixture_root) -> None:
    """A container with cpu.max '250000 100000' gets 2 usable threads of 8, and its 4 GiB memory cap shows."""
    hw = detect(root=fixture_root("epyc_container_cgroup_v2"))
    assert hw.cpu.logical_cores == 8
    assert hw.cpu.usable_cores == 2
    assert hw.memory.limit_bytes == 4 * GIB
    assert hw.memory.usable_bytes == 4 * GIB


def test_cgroup_v1_quota(editable_root) -> None:
    """A v1 cfs quota of 3 periods gives 3 usable cores; a quota of -1 means no limit."""
    root = editable_root("epyc_zen3")
    write(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "300000\n")
    write(root, "/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    assert detect(root=root).cpu.usable_cores == 3
    write(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    assert detect(root=root).cpu.usable_cores == 8


def test_nested_cgroup_v2_takes_tightest_limit(editable_root) -> None:
    """The process's own cgroup may be capped below an unlimited parent; the tightest limit wins."""
    root = editable_root("epyc_zen3")
    write(root, "/proc/self/cgroup", "0::/system.slice/planner.service\n")
    write(root, "/sys/fs/cgroup/system.slice/cpu.max", "max 100000\n")
    write(root, "/sys/fs/cgroup/system.slice/planner.service/cpu.max", "150000 100000\n")
    assert detect(root=root).cpu.usable_cores == 1


def test_quota_never_below_one_core(editable_root) -> None:
    """A quarter-core quota still leaves one usable thread."""
    root = editable_root("epyc_zen3")
    write(root, "/sys/fs/cgroup/cpu.max", "25000 100000\n")
    assert detect(root=root).cpu.usable_cores == 1


def test_desktop_x86(tmp_path: Path) -> None:
    """An x86 CPU without a server name is a desktop CPU."""
    write(tmp_path, "/proc/cpuinfo",
          "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: 12th Gen Intel(R) Core(TM) i7-12700K\n"
          "flags\t\t: fpu sse2 lm avx avx2 fma f16c avx_vnni\n")
    hw = detect(root=tmp_path)
    assert hw.device_class is DeviceClass.DESKTOP_CPU
    assert hw.cpu.has("avx_vnni") and not hw.cpu.has_avx512


def test_generic_arm_board(tmp_path: Path) -> None:
    """An ARM board that is neither a Pi nor a Jetson is an ARM board, named from its device tree."""
    blocks = "\n".join(
        f"processor\t: {i}\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
        f"CPU part\t: {part}\n" for i, part in enumerate(("0xd05", "0xd05", "0xd0b", "0xd0b")))
    write(tmp_path, "/proc/cpuinfo", blocks)
    write(tmp_path, "/proc/device-tree/model", "Radxa ROCK 5B\x00")
    hw = detect(root=tmp_path)
    assert hw.device_class is DeviceClass.ARM_BOARD
    assert hw.board == "Radxa ROCK 5B"
    # big.LITTLE: both core types are named.
    assert hw.cpu.model == "ARM Cortex-A55 + Cortex-A76"


def test_32bit_arm_kernel(tmp_path: Path) -> None:
    """A 32-bit Raspberry Pi OS reports 'neon' rather than 'asimd'; the architecture is armv7l."""
    write(tmp_path, "/proc/cpuinfo",
          "processor\t: 0\nmodel name\t: ARMv7 Processor rev 3 (v7l)\n"
          "Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32\n"
          "CPU implementer\t: 0x41\nCPU architecture: 7\nCPU part\t: 0xd08\n\n"
          "Hardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.5\n")
    hw = detect(root=tmp_path)
    assert hw.cpu.architecture == "armv7l"
    assert hw.cpu.has("neon")
    # No device tree: the board still comes from /proc/cpuinfo's Model line.
    assert hw.device_class is DeviceClass.RASPBERRY_PI
    assert hw.board == "Raspberry Pi 4 Model B Rev 1.5"


def test_datacenter_gpu_class(fixture_root) -> None:
    """An A100 makes the machine a datacenter GPU box, with the driver and CUDA versions from NVML."""
    hw = detect(root=fixture_root("epyc_zen3"), nvml_module=FakeNvml([a100()]))
    assert hw.device_class is DeviceClass.DATACENTER_GPU
    assert hw.gpus[0].name == "NVIDIA A100-SXM4-80GB"
    assert hw.driver_version == "550.54.15" and hw.cuda_version == "12.4"
    assert hw.note("gpu") is None and hw.note("nvml") is None


def test_desktop_gpu_class(fixture_root) -> None:
    """A GeForce card makes the machine a desktop GPU box."""
    hw = detect(root=fixture_root("epyc_zen3"), nvml_module=FakeNvml([rtx4090()]))
    assert hw.device_class is DeviceClass.DESKTOP_GPU
    assert hw.gpus[0].tensor_core_generation == "Ada Lovelace (4th gen)"


@pytest.mark.parametrize("name, datacenter", [
    ("NVIDIA H100 80GB HBM3", True), ("NVIDIA L4", True), ("Tesla T4", True), ("NVIDIA A10G", True),
    ("NVIDIA L40S", True), ("NVIDIA B200", True), ("NVIDIA GeForce RTX 3090", False),
    ("NVIDIA RTX A2000", False), ("Quadro RTX 8000", False), ("NVIDIA GeForce RTX 4060 Laptop GPU", False),
])
def test_datacenter_gpu_names(name: str, datacenter: bool) -> None:
    """Datacenter parts are recognised by name without catching workstation or GeForce cards."""
    assert detect_module.is_datacenter_gpu(name) is datacenter


def test_no_driver_reason(fixture_root) -> None:
    """With NVML present but the driver not loaded, there are no GPUs and the reason is recorded."""
    nvml = FakeNvml(init_error=NVMLError_DriverNotLoaded())
    hw = detect(root=fixture_root("epyc_zen3"), nvml_module=nvml)
    assert hw.gpus == () and not hw.has_cuda_gpu
    assert hw.note("nvml") == "NVML: driver not loaded (NVMLError_DriverNotLoaded)"
    assert hw.note("gpu") == "no NVIDIA GPU: NVML: driver not loaded (NVMLError_DriverNotLoaded)"
    assert hw.device_class is DeviceClass.CPU_SERVER


def test_fixture_tree_never_probes_real_nvml(fixture_root, monkeypatch) -> None:
    """A fixture tree describes another machine, so this host's NVML is not consulted."""
    def fail(*args, **kwargs):
        raise AssertionError("real NVML probed for a fixture tree")

    monkeypatch.setattr(detect_module, "probe_gpus", fail)
    hw = detect(root=fixture_root("rpi5"))
    assert "fixture tree" in (hw.note("nvml") or "")


def test_one_failing_probe_does_not_fail_detection(fixture_root, monkeypatch) -> None:
    """A crashing board probe is noted; the CPU, memory and class are still detected."""
    def explode(*args, **kwargs):
        raise RuntimeError("device tree on fire")

    monkeypatch.setattr(detect_module, "probe_board", explode)
    hw = detect(root=fixture_root("xeon_sapphire_rapids"))
    assert hw.note("board") == "probe failed: RuntimeError: device tree on fire"
    assert hw.cpu.has_amx and hw.memory.total_bytes
    assert hw.device_class is DeviceClass.CPU_SERVER


def test_crashing_cpu_probe_falls_back(fixture_root, monkeypatch) -> None:
    """Even the CPU probe crashing leaves a usable profile with at least one core."""
    def explode(*args, **kwargs):
        raise ValueError("unparseable")

    monkeypatch.setattr(detect_module, "probe_cpu", explode)
    hw = detect(root=fixture_root("epyc_zen3"))
    assert hw.cpu.usable_cores >= 1
    assert "unparseable" in (hw.note("cpu") or "")


def test_empty_root(tmp_path: Path) -> None:
    """A tree with nothing in it yields a profile full of 'unknown' and a note for each missing source."""
    hw = detect(root=tmp_path)
    assert hw.cpu.logical_cores == 1 and hw.cpu.usable_cores == 1
    assert hw.memory.total_bytes is None
    for probe in ("cpu.cpuinfo", "cpu.architecture", "cpu.caches", "memory", "gpu"):
        assert hw.note(probe), probe
    assert HardwareProfile.from_json(hw.to_json()) == hw


def test_real_machine() -> None:
    """detect() on this machine: sane core counts, the right architecture, and GPUs or a reason."""
    hw = detect()
    assert hw.cpu.architecture == platform.machine()
    assert 1 <= hw.cpu.usable_cores <= hw.cpu.logical_cores
    assert hw.cpu.usable_cores <= len(os.sched_getaffinity(0))
    assert hw.memory.total_bytes and hw.memory.total_bytes > 0
    assert hw.gpus or (hw.note("gpu") or "").startswith("no NVIDIA GPU")
    assert hw.python_version == platform.python_version()
    assert HardwareProfile.from_json(hw.to_json()) == hw
