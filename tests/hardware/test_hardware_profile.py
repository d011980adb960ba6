"""HardwareProfile values: tensor-core generations, JSON round trips, and parsing helpers."""

from __future__ import annotations

import json

import pytest
from hardware_fake_nvml import FakeNvml, a100, rtx4090
from hardware_trees import FIXTURES

from planner.codec import from_data, to_data
from planner.hardware import DeviceClass, GpuInfo, HardwareProfile, detect
from planner.hardware.arm import parse_l4t_release
from planner.hardware.cgroup import cpu_quota_to_threads
from planner.hardware.cpu import normalise_features, parse_cpuinfo
from planner.hardware.profile import tensor_core_generation


@pytest.mark.parametrize("cc, generation", [
    (None, None),
    ((6, 1), None),
    ((7, 0), "Volta (1st gen)"),
    ((7, 2), "Volta (1st gen)"),
    ((7, 5), "Turing (2nd gen)"),
    ((8, 0), "Ampere (3rd gen)"),
    ((8, 6), "Ampere (3rd gen)"),
    ((8, 7), "Ampere (3rd gen)"),
    ((8, 9), "Ada Lovelace (4th gen)"),
    ((9, 0), "Hopper (4th gen)"),
    ((10, 0), "Blackwell (5th gen)"),
    ((12, 0), "Blackwell (5th gen)"),
])
def test_tensor_core_generation(cc, generation) -> None:
    """Compute capability decides the tensor-core generation; below 7.0 there are none."""
    assert tensor_core_generation(cc) == generation
    gpu = GpuInfo(index=0, name="x", memory_total_bytes=1, compute_capability=cc)
    assert gpu.tensor_core_generation == generation
    assert gpu.has_tensor_cores is (generation is not None)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_json_round_trip_every_fixture(name: str) -> None:
    """Every fixture machine survives to_json → from_json exactly, and the JSON is plain JSON."""
    hw = detect(root=FIXTURES / name)
    text = hw.to_json()
    assert isinstance(json.loads(text), dict)
    assert HardwareProfile.from_json(text) == hw
    assert from_data(to_data(hw), HardwareProfile) == hw


def test_json_round_trip_with_gpus() -> None:
    """GPU fields, including tuples and None for unsupported ones, round-trip exactly."""
    nvml = FakeNvml([a100(unsupported={"utilization"}), rtx4090()])
    hw = detect(root=FIXTURES / "epyc_zen3", nvml_module=nvml)
    data = json.loads(hw.to_json())
    assert data["device_class"] == "datacenter_gpu"
    assert data["gpus"][0]["compute_capability"] == [8, 0]
    assert data["gpus"][0]["tensor_core_generation"] == "Ampere (3rd gen)"
    back = HardwareProfile.from_json(hw.to_json())
    assert back == hw
    assert back.gpus[0].compute_capability == (8, 0)
    assert back.gpus[0].utilization_pct is None
    assert back.device_class is DeviceClass.DATACENTER_GPU


def test_device_class_is_str_enum() -> None:
    """Device classes compare and serialise as plain strings."""
    assert DeviceClass.RASPBERRY_PI == "raspberry_pi"
    assert DeviceClass("jetson") is DeviceClass.JETSON
    assert DeviceClass.CPU_SERVER.label == "CPU server"


def test_l4t_release_parsing() -> None:
    """The L4T release line becomes 'R36.3.0'; other text is not a release."""
    assert parse_l4t_release("# R36 (release), REVISION: 3.0, GCID: 36191598, BOARD: generic") == "R36.3.0"
    assert parse_l4t_release("# R35 (release), REVISION: 4.1, GCID: 33958178") == "R35.4.1"
    assert parse_l4t_release("garbage") is None


def test_feature_normalisation() -> None:
    """ARM 'asimd' is reported as 'neon'; x86 flags that do not matter are dropped."""
    arm = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd asimddp i8mm bf16 sve sve2 sha3\n")
    assert normalise_features(arm) == ("asimddp", "bf16", "i8mm", "neon", "sve", "sve2")
    x86 = parse_cpuinfo("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma amx_tile avx512_vnni\n")
    assert normalise_features(x86) == ("amx_tile", "avx2", "avx512_vnni", "fma")


def test_unknown_arm_part_is_named_by_number() -> None:
    """An ARM core not in the table is shown by its part number rather than guessed."""
    from planner.hardware.cpu import identify

    info = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xfff\n")
    vendor, model, implementer, part = identify(info)
    assert (vendor, model, implementer, part) == ("ARM", "ARM part 0xfff", "0x41", "0xfff")


@pytest.mark.parametrize("cores, threads", [(0.25, 1), (1.0, 1), (1.5, 1), (2.5, 2), (4.0, 4)])
def test_quota_to_threads(cores: float, threads: int) -> None:
    """Fractional quotas round down to whole threads, never below one."""
    assert cpu_quota_to_threads(cores) == threads
