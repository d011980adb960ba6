"""Which energy counter measures work on a device here: the board's rails first, then the device's own counter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.hardware._files import REAL_ROOT, FileReader, is_real_root, read_file
from planner.hardware.energy.counter import CounterProbe
from planner.hardware.energy.gpu import find_nvml
from planner.hardware.energy.ina3221 import find_ina3221
from planner.hardware.energy.pmic import CommandRunner, find_pmic
from planner.hardware.energy.rapl import find_rapl


def find_counter(root: Path = REAL_ROOT, *, device: str = "cpu", nvml_module: Any | None = None,
                 vcgencmd: CommandRunner | None = None, reader: FileReader = read_file) -> CounterProbe:
    """The counter that measures work on `device` ('cpu' or 'cuda[:N]'), or why none does.

    A Jetson's INA3221 or a Pi 5's PMIC rails feed the whole SoC, so they serve either device. Otherwise
    work on a GPU is measured by NVML and work on the CPU by RAPL. A fixture tree (`root` not '/') is not
    this machine: NVML and vcgencmd are probed there only when a fake is given.
    """
    root = Path(root)
    real = is_real_root(root)
    notes: list[str] = []
    counter, why = find_ina3221(root, reader)
    if counter is not None:
        return CounterProbe(counter=counter)
    notes.append(f"Jetson rails: {why}")
    if vcgencmd is not None or real:
        counter, why = find_pmic(vcgencmd)
        if counter is not None:
            return CounterProbe(counter=counter, notes=tuple(notes))
    else:
        why = f"not probed: {root} is a fixture tree and no vcgencmd was given"
    notes.append(f"Raspberry Pi 5 PMIC: {why}")
    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if nvml_module is None and not real:
            return CounterProbe(reason=f"not probed: {root} is a fixture tree and no NVML module was given",
                                notes=tuple(notes))
        counter, why = find_nvml(nvml_module, index)
        if counter is not None:
            return CounterProbe(counter=counter, notes=tuple(notes))
        return CounterProbe(reason=f"no GPU energy counter: {why}", notes=tuple(notes))
    counter, why, fix = find_rapl(root, reader)
    if counter is not None:
        return CounterProbe(counter=counter, notes=tuple(notes))
    return CounterProbe(reason=f"no CPU energy counter: {why}", fix=fix, notes=tuple(notes))


def describe(probe: CounterProbe) -> str:
    """The probe in one line: the counter and what it covers, or 'none: why' with the fix (never a TDP guess)."""
    counter = probe.counter
    if counter is None:
        fix = f". To make it readable: {probe.fix}" if probe.fix else ""
        return f"none: {probe.reason}{fix}. Energy per inference is then reported as unavailable"
    return f"{counter.scope} via {counter.source}" + (f" ({counter.detail})" if counter.detail else "")


def probe_devices(gpus: int) -> dict[str, CounterProbe]:
    """This machine's counter for CPU work, and for GPU work when it has GPUs (`planner detect` shows both)."""
    probes = {"cpu": find_counter(device="cpu")}
    if gpus:
        probes["cuda"] = find_counter(device="cuda")
    return probes
