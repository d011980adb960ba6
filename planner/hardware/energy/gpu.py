"""NVIDIA GPUs through NVML's total-energy counter: millijoules since the driver loaded, no root needed.

`nvmlDeviceGetTotalEnergyConsumption` exists on Volta and newer; older boards (and Jetson, whose NVML
is partial) answer NotSupported, which the probe reports in words.
"""

from __future__ import annotations

from typing import Any

from planner.hardware.energy.counter import SCOPE_GPU, Counter, CounterFamily, EnergyReadError
from planner.hardware.nvml import describe_error

RESOLUTION_J = 1e-3  # the counter counts whole millijoules


def load_nvml(nvml_module: Any | None) -> Any:
    """The given NVML module, else pynvml (imported only here, so importing the planner never touches a driver)."""
    if nvml_module is not None:
        return nvml_module
    import pynvml

    return pynvml


def find_nvml(nvml_module: Any | None = None, gpu_index: int = 0) -> tuple[Counter | None, str]:
    """(the GPU's counter, '') or (None, why not) after one trial read."""
    try:
        nvml = load_nvml(nvml_module)
    except ImportError as exc:
        return None, f"nvidia-ml-py (pynvml) is not installed: {exc}"
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses or OSError from ctypes
        return None, describe_error(exc)
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(gpu_index)
        nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        name = nvml.nvmlDeviceGetName(handle)
    except Exception as exc:  # noqa: BLE001 - NotSupported before Volta, NoPermission, a lost GPU
        return None, f"GPU {gpu_index}'s total-energy counter: {describe_error(exc)}"
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - a failed shutdown does not change what was read
            pass
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    return Counter(family=CounterFamily.NVML, scope=SCOPE_GPU, source="NVML total energy (nvidia-ml-py)",
                   detail=f"GPU {gpu_index} ({name})", gpu_index=gpu_index, resolution_j=RESOLUTION_J), ""


class NvmlEnergy:
    """An open NVML session reading one GPU's counter in joules; `close` shuts NVML down."""

    def __init__(self, counter: Counter, nvml_module: Any | None = None) -> None:
        self._nvml = load_nvml(nvml_module)
        try:
            self._nvml.nvmlInit()
            self._handle = self._nvml.nvmlDeviceGetHandleByIndex(counter.gpu_index)
        except Exception as exc:  # noqa: BLE001 - see find_nvml
            raise EnergyReadError(describe_error(exc)) from exc

    def read_j(self) -> float:
        """Joules since the driver loaded."""
        try:
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)) / 1e3
        except Exception as exc:  # noqa: BLE001 - see find_nvml
            raise EnergyReadError(describe_error(exc)) from exc

    def close(self) -> None:
        """Shut NVML down (errors there change nothing already read)."""
        try:
            self._nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - see above
            pass
