"""probe_gpus() against a fake NVML: missing drivers, one and two GPUs, and fields that are not supported."""

from __future__ import annotations

from hardware_fake_nvml import (
    FakeNvml,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    OldFakeNvml,
    a100,
    rtx4090,
)

from planner.hardware.nvml import probe_gpus

GIB = 1 << 30


def test_driver_not_loaded() -> None:
    """nvmlInit failing means no GPUs, with NVML's reason in plain words."""
    result = probe_gpus(FakeNvml(init_error=NVMLError_DriverNotLoaded()))
    notes = dict(result.notes)
    assert result.gpus == ()
    assert notes["nvml"] == "NVML: driver not loaded (NVMLError_DriverNotLoaded)"
    assert notes["gpu"].startswith("no NVIDIA GPU: ")


def test_library_not_found() -> None:
    """No libnvidia-ml at all says there is no NVIDIA driver installed."""
    result = probe_gpus(FakeNvml(init_error=NVMLError_LibraryNotFound()))
    assert result.gpus == ()
    assert "no NVIDIA driver is installed" in dict(result.notes)["nvml"]
    assert "NVMLError_LibraryNotFound" in dict(result.notes)["gpu"]


def test_unexpected_init_error() -> None:
    """An error NVML does not name (e.g. from ctypes) is still a reason, not a crash."""
    result = probe_gpus(FakeNvml(init_error=OSError("libnvidia-ml.so.1: wrong ELF class")))
    assert result.gpus == ()
    assert dict(result.notes)["nvml"] == "NVML: libnvidia-ml.so.1: wrong ELF class (OSError)"


def test_one_a100() -> None:
    """Every field of an A100 is read; the bytes name is decoded and the CUDA version is readable text."""
    nvml = FakeNvml([a100()])
    result = probe_gpus(nvml)
    assert len(result.gpus) == 1
    gpu = result.gpus[0]
    assert gpu.index == 0
    assert gpu.name == "NVIDIA A100-SXM4-80GB"
    assert gpu.memory_total_bytes == 80 * GIB and gpu.memory_free_bytes == 79 * GIB
    assert gpu.compute_capability == (8, 0)
    assert gpu.tensor_core_generation == "Ampere (3rd gen)"
    assert gpu.sm_count == 108
    assert gpu.max_sm_clock_mhz == 1410 and gpu.utilization_pct == 3
    assert result.driver_version == "550.54.15" and result.cuda_version == "12.4"
    assert result.notes == ()
    assert nvml.init_calls == 1 and nvml.shutdown_calls == 1


def test_two_gpus() -> None:
    """Two different GPUs come back in index order with their own fields."""
    result = probe_gpus(FakeNvml([a100(), rtx4090()]))
    assert [g.index for g in result.gpus] == [0, 1]
    assert [g.name for g in result.gpus] == ["NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090"]
    assert result.gpus[1].tensor_core_generation == "Ada Lovelace (4th gen)"
    assert result.gpus[1].sm_count == 128


def test_not_supported_fields_are_none_with_reasons() -> None:
    """Unsupported utilisation and clock queries cost only those fields, each with a note."""
    nvml = FakeNvml([a100(unsupported={"utilization", "clock"})])
    result = probe_gpus(nvml)
    gpu = result.gpus[0]
    assert gpu.utilization_pct is None and gpu.max_sm_clock_mhz is None
    assert gpu.memory_total_bytes == 80 * GIB and gpu.compute_capability == (8, 0)
    notes = dict(result.notes)
    assert notes["nvml.gpu0.utilization"] == "NVML: not supported (NVMLError_NotSupported)"
    assert notes["nvml.gpu0.max_sm_clock"] == "NVML: not supported (NVMLError_NotSupported)"
    assert nvml.shutdown_calls == 1


def test_name_and_memory_unsupported() -> None:
    """A GPU whose name cannot be read is still listed, under a placeholder name."""
    result = probe_gpus(FakeNvml([a100(unsupported={"name", "memory"})]))
    gpu = result.gpus[0]
    assert gpu.name == "NVIDIA GPU 0"
    assert gpu.memory_total_bytes is None and gpu.memory_free_bytes is None


def test_sm_count_from_core_count() -> None:
    """Without device attributes, the SM count comes from CUDA cores / cores per SM (6912 / 64 on cc 8.0)."""
    result = probe_gpus(FakeNvml([a100(sm_count=None)]))
    assert result.gpus[0].sm_count == 108


def test_sm_count_on_pynvml_without_attributes() -> None:
    """A pynvml without nvmlDeviceGetAttributes still gets the SM count from the core count."""
    result = probe_gpus(OldFakeNvml([rtx4090()]))
    assert result.gpus[0].sm_count == 128


def test_sm_count_unknown_has_reason() -> None:
    """When neither route works, the SM count is None and the note says why for both."""
    result = probe_gpus(FakeNvml([a100(sm_count=None, cuda_cores=None)]))
    assert result.gpus[0].sm_count is None
    reason = dict(result.notes)["nvml.gpu0.sm_count"]
    assert "device attributes" in reason and "core count" in reason


def test_unreadable_handle_skips_that_gpu() -> None:
    """A GPU that refuses a handle is skipped with a note; the others are still reported."""
    result = probe_gpus(FakeNvml([a100(), rtx4090()], bad_handles={0}))
    assert [g.name for g in result.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert "NVMLError_NoPermission" in dict(result.notes)["nvml.gpu0.handle"]


def test_shutdown_even_when_count_fails() -> None:
    """NVML is shut down even when an unexpected error hits mid-probe."""
    nvml = FakeNvml([a100()], count_error=RuntimeError("bus error"))
    result = probe_gpus(nvml)
    assert result.gpus == ()
    assert nvml.shutdown_calls == 1
    assert "bus error" in dict(result.notes)["nvml.device_count"]
    assert dict(result.notes)["gpu"].startswith("no NVIDIA GPU")


def test_zero_devices() -> None:
    """NVML working but listing no devices says so."""
    result = probe_gpus(FakeNvml([]))
    assert result.gpus == ()
    assert dict(result.notes)["gpu"] == "no NVIDIA GPU: NVML initialised but reports 0 devices"
