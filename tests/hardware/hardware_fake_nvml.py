"""A fake pynvml: the function names and NVMLError classes the probe uses, driven by plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

_MESSAGES = {
    "NVMLError_NotSupported": "Not Supported",
    "NVMLError_DriverNotLoaded": "Driver Not Loaded",
    "NVMLError_LibraryNotFound": "NVML Shared Library Not Found",
    "NVMLError_NoPermission": "Insufficient Permissions",
}


class NVMLError(Exception):
    """Base class, as in pynvml."""

    def __str__(self) -> str:
        return _MESSAGES.get(type(self).__name__, "Unknown Error")


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's own spelling
    """The device or driver does not support this query."""


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    """The kernel driver is not loaded."""


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    """libnvidia-ml.so.1 is missing."""


class NVMLError_NoPermission(NVMLError):  # noqa: N801
    """The user may not query the device."""


@dataclass
class FakeGpu:
    """One GPU; fields named in `unsupported` raise NVMLError_NotSupported, `broken` ones raise RuntimeError."""

    name: str | bytes
    total: int
    free: int
    cc: tuple[int, int]
    sm_count: int | None = None
    cuda_cores: int | None = None
    max_sm_clock: int = 1410
    utilization: int = 0
    # Successive total-energy readings in mJ, one per call (the last repeats); empty: a pre-Volta GPU without it.
    energy_mj: list[int] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)

    def read(self, what: str, value: Any) -> Any:
        """`value`, unless this field is configured to fail."""
        if what in self.unsupported:
            raise NVMLError_NotSupported()
        if what in self.broken:
            raise RuntimeError(f"{what} exploded")
        return value


class FakeNvml:
    """Stands in for the pynvml module; counts init/shutdown so tests can check the probe cleans up."""

    NVML_CLOCK_SM = 1
    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_NoPermission = NVMLError_NoPermission

    def __init__(self, gpus: list[FakeGpu] | None = None, *, init_error: Exception | None = None,
                 driver: str | bytes = b"550.54.15", cuda: int = 12040, count_error: Exception | None = None,
                 bad_handles: set[int] | None = None) -> None:
        self.gpus = gpus or []
        self.init_error = init_error
        self.driver = driver
        self.cuda = cuda
        self.count_error = count_error
        self.bad_handles = bad_handles or set()
        self.init_calls = 0
        self.shutdown_calls = 0

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        """Fail with `init_error` if set."""
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:  # noqa: N802
        """Count the shutdown."""
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> str | bytes:  # noqa: N802
        """The driver version string."""
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # noqa: N802
        """The CUDA version as an integer (12040 = 12.4)."""
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        """How many GPUs."""
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:  # noqa: N802
        """The GPU itself serves as its handle."""
        if index in self.bad_handles:
            raise NVMLError_NoPermission()
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str | bytes:  # noqa: N802
        """The marketing name."""
        return handle.read("name", handle.name)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> SimpleNamespace:  # noqa: N802
        """Total/free/used bytes."""
        return handle.read("memory", SimpleNamespace(total=handle.total, free=handle.free,
                                                     used=handle.total - handle.free))

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeGpu) -> tuple[int, int]:  # noqa: N802
        """(major, minor)."""
        return handle.read("cc", handle.cc)

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeGpu, clock_type: int) -> int:  # noqa: N802
        """Max SM clock in MHz."""
        assert clock_type == self.NVML_CLOCK_SM
        return handle.read("clock", handle.max_sm_clock)

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGpu) -> SimpleNamespace:  # noqa: N802
        """GPU and memory utilisation percentages."""
        return handle.read("utilization", SimpleNamespace(gpu=handle.utilization, memory=0))

    def nvmlDeviceGetAttributes(self, handle: FakeGpu) -> SimpleNamespace:  # noqa: N802
        """Device attributes with the SM count."""
        if handle.sm_count is None:
            raise NVMLError_NotSupported()
        return handle.read("attributes", SimpleNamespace(multiprocessorCount=handle.sm_count))

    def nvmlDeviceGetNumGpuCores(self, handle: FakeGpu) -> int:  # noqa: N802
        """CUDA core count."""
        if handle.cuda_cores is None:
            raise NVMLError_NotSupported()
        return handle.read("cores", handle.cuda_cores)


    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeGpu) -> int:  # noqa: N802
        """Millijoules since the driver loaded: the next of `energy_mj`."""
        if not handle.energy_mj:
            raise NVMLError_NotSupported()
        value = handle.energy_mj[0] if len(handle.energy_mj) == 1 else handle.energy_mj.pop(0)
        return handle.read("energy", value)


class OldFakeNvml(FakeNvml):
    """A pynvml too old to have nvmlDeviceGetAttributes, so the SM count must come from the core count."""

    def __getattribute__(self, name: str) -> Any:
        if name == "nvmlDeviceGetAttributes":
            raise AttributeError(name)
        return super().__getattribute__(name)


GIB = 1 << 30


def a100(**overrides: Any) -> FakeGpu:
    """An A100-SXM4-80GB as NVML reports it (name as bytes, like older pynvml)."""
    values: dict[str, Any] = dict(name=b"NVIDIA A100-SXM4-80GB", total=80 * GIB, free=79 * GIB, cc=(8, 0),
                                  sm_count=108, cuda_cores=6912, max_sm_clock=1410, utilization=3)
    values.update(overrides)
    return FakeGpu(**values)


def rtx4090(**overrides: Any) -> FakeGpu:
    """A GeForce RTX 4090 (Ada, cc 8.9)."""
    values: dict[str, Any] = dict(name="NVIDIA GeForce RTX 4090", total=24 * GIB, free=22 * GIB, cc=(8, 9),
                                  sm_count=128, cuda_cores=16384, max_sm_clock=3105, utilization=12)
    values.update(overrides)
    return FakeGpu(**values)
