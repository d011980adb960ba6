"""Machine facts that change a measured number while it is taken: SMT, clocks, throttling, power mode.

Each probe reads one thing and says "not readable" (with why) when the machine does not expose
it, rather than guessing. Every file read goes through a root so tests can use fake trees; the
board tools (`vcgencmd` on a Raspberry Pi, `nvpmodel` on a Jetson) run only when on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.hardware._files import at, read_int, read_text

NOT_READABLE = "not readable"

# NVML clock-event (throttle) reason bits that mean the GPU slowed itself down; idle and
# application-clock settings are not slow-downs (the names of pynvml's nvmlClocksThrottleReason* constants).
_NVML_SLOWDOWNS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
# `vcgencmd get_throttled` bits: 0-3 happening now, 16-19 the same since boot.
_PI_THROTTLE_BITS = {0: "under-voltage", 1: "ARM frequency capped", 2: "throttled", 3: "soft temperature limit"}

Runner = Callable[[list[str]], str | None]


def run_tool(argv: list[str]) -> str | None:
    """A board tool's stdout, or None when it is not on PATH, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _cpu_dir(root: Path, cpu: int) -> Path:
    return at(root, f"/sys/devices/system/cpu/cpu{cpu}")


def smt(root: Path) -> str:
    """SMT ('on', 'off', 'not supported') from sysfs: two threads sharing a core slow each other."""
    control = read_text(at(root, "/sys/devices/system/cpu/smt/control"))
    if control is not None and control.strip():
        value = control.strip()
        return {"notsupported": "not supported", "forceoff": "off (forced)", "notimplemented": "not supported"}.get(
            value, value)
    siblings = read_text(_cpu_dir(root, 0) / "topology" / "thread_siblings_list")
    if siblings is not None and siblings.strip():
        count = sum(_range_len(part) for part in siblings.strip().split(","))
        return f"on ({count} threads per core)" if count > 1 else "off"
    return f"{NOT_READABLE}: no /sys/devices/system/cpu/smt/control or topology"


def _range_len(part: str) -> int:
    bounds = part.split("-")
    try:
        return int(bounds[-1]) - int(bounds[0]) + 1
    except ValueError:
        return 0


def governor(root: Path, cpus: Iterable[int]) -> str:
    """The frequency governors of the given CPUs ('performance', 'powersave, schedutil'), or why not readable."""
    names = sorted({text.strip() for cpu in cpus
                    if (text := read_text(_cpu_dir(root, cpu) / "cpufreq" / "scaling_governor"))})
    return ", ".join(names) if names else f"{NOT_READABLE}: no cpufreq scaling_governor (virtual machine or no driver)"


def clock_mhz(root: Path, cpus: Iterable[int]) -> tuple[float | None, float | None]:
    """(mean current clock, highest maximum clock) in MHz over the given CPUs; None where cpufreq lacks them."""
    current, maximum = [], []
    for cpu in cpus:
        base = _cpu_dir(root, cpu) / "cpufreq"
        cur = read_int(base / "scaling_cur_freq")
        top = read_int(base / "cpuinfo_max_freq")
        if cur:
            current.append(cur / 1000)
        if top:
            maximum.append(top / 1000)
    return (sum(current) / len(current) if current else None), (max(maximum) if maximum else None)


def throttle_count(root: Path, cpus: Iterable[int]) -> int | None:
    """Thermal throttle events so far (x86 core and package counters summed), or None when not exposed."""
    total, seen = 0, False
    for cpu in cpus:
        for name in ("core_throttle_count", "package_throttle_count"):
            value = read_int(_cpu_dir(root, cpu) / "thermal_throttle" / name)
            if value is not None:
                total += value
                seen = True
    return total if seen else None


@dataclass(frozen=True)
class ThermalZone:
    """One thermal zone's temperature and the lowest trip point at which the kernel starts slowing the chip."""

    name: str
    temp_c: float
    passive_trip_c: float | None


def thermal_zones(root: Path) -> list[ThermalZone]:
    """Every readable /sys/class/thermal zone (boards and laptops have them; most servers and VMs do not)."""
    base = at(root, "/sys/class/thermal")
    try:
        dirs = sorted(d for d in base.iterdir() if d.name.startswith("thermal_zone"))
    except OSError:
        return []
    zones = []
    for zone in dirs:
        temp = read_int(zone / "temp")
        if temp is None:
            continue
        trips = []
        for trip in sorted(zone.glob("trip_point_*_type")):
            if (read_text(trip) or "").strip() in ("passive", "hot"):
                value = read_int(trip.with_name(trip.name.replace("_type", "_temp")))
                if value:
                    trips.append(value / 1000)
        zones.append(ThermalZone((read_text(zone / "type") or zone.name).strip(), temp / 1000,
                                 min(trips) if trips else None))
    return zones


def hot_zones(zones: list[ThermalZone]) -> list[str]:
    """Zones at or above their passive trip point: the kernel is throttling for heat there."""
    return [f"{z.name} at {z.temp_c:.0f} °C (throttles from {z.passive_trip_c:.0f} °C)" for z in zones
            if z.passive_trip_c is not None and z.temp_c >= z.passive_trip_c]


def pi_throttled(run: Runner = run_tool) -> tuple[str, list[str], list[str]] | None:
    """Raspberry Pi `vcgencmd get_throttled`: (raw value, happening now, since boot); None without vcgencmd."""
    out = run(["vcgencmd", "get_throttled"])
    match = re.search(r"throttled=(0x[0-9a-fA-F]+)", out or "")
    if not match:
        return None
    bits = int(match.group(1), 16)
    now = [name for bit, name in _PI_THROTTLE_BITS.items() if bits & (1 << bit)]
    since = [name for bit, name in _PI_THROTTLE_BITS.items() if bits & (1 << (bit + 16))]
    return match.group(1), now, since


def jetson_power_mode(run: Runner = run_tool) -> str | None:
    """A Jetson's power mode from `nvpmodel -q` ('MAXN'), or None without nvpmodel."""
    out = run(["nvpmodel", "-q"])
    match = re.search(r"NV Power Mode:\s*(\S+)", out or "")
    return match.group(1) if match else None


@dataclass(frozen=True)
class GpuClocks:
    """One GPU's SM clock now and at most, and the slow-down reasons NVML reports."""

    sm_mhz: int | None
    max_sm_mhz: int | None
    slowdowns: tuple[str, ...]
    note: str = ""


def gpu_clocks(index: int = 0, nvml_module: Any | None = None) -> GpuClocks | None:
    """SM clocks and slow-down (throttle) reasons of one GPU through NVML; None when there is no NVML GPU."""
    nvml: Any = nvml_module
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver or no GPU: there is nothing to audit
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        clock_sm = getattr(nvml, "NVML_CLOCK_SM", 1)
        sm = _nvml_int(lambda: nvml.nvmlDeviceGetClockInfo(handle, clock_sm))
        top = _nvml_int(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, clock_sm))
        # Newer NVML calls throttle reasons "clock event reasons"; older pynvml has only the first name.
        reasons_call = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                        or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        bits = _nvml_int(lambda: reasons_call(handle)) if reasons_call else None
        slowdowns = tuple(name for bit, name in _NVML_SLOWDOWNS.items() if bits and bits & bit)
        note = "" if bits is not None else "throttle reasons not readable through this NVML"
        return GpuClocks(sm, top, slowdowns, note)
    except Exception:  # noqa: BLE001 - a handle NVML refuses means the GPU cannot be audited
        return None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - readings already taken stay valid
            pass


def _nvml_int(call: Callable[[], Any]) -> int | None:
    try:
        return int(call())
    except Exception:  # noqa: BLE001 - one unsupported NVML call costs one reading
        return None
