"""Intel and AMD RAPL through the powercap sysfs tree: cumulative microjoules per CPU package.

The kernel's intel_rapl driver also serves AMD Zen CPUs (since Linux 5.8/5.11), under the same
`intel-rapl:N` names. Only the top-level package domains are summed: their sub-domains (core,
uncore, dram) are parts of them, and `psys` (platform) and the `intel-rapl-mmio` copy would
count the package twice. Since the 2020 PLATYPUS fix (CVE-2020-8694) `energy_uj` is readable
by root only; the probe says so and gives the change that makes it readable.
"""

from __future__ import annotations

import re
from pathlib import Path

from planner.hardware._files import FileReader, at, read_file, read_number
from planner.hardware.energy.counter import SCOPE_CPU, Counter, CounterFamily, EnergyReadError

POWERCAP = "/sys/class/powercap"
_PACKAGE = re.compile(r"^intel-rapl:(\d+)$")
# Intel's energy status unit is 2^-14 J (61 µJ) on most parts, AMD's 2^-16 J (15.3 µJ); the coarser one is stated.
RESOLUTION_J = 2.0 ** -14
FIX = ("sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj (until the next reboot; to keep it, a udev "
       "rule: SUBSYSTEM==\"powercap\", ACTION==\"add\", RUN+=\"/bin/chmod o+r /sys%p/energy_uj\")")
UNREADABLE = ("the RAPL energy counters exist but only root may read them (since the 2020 PLATYPUS fix, "
              "CVE-2020-8694)")


def find_rapl(root: Path, reader: FileReader = read_file) -> tuple[Counter | None, str, str]:
    """(the counter, '', '') or (None, why not, the fix or '') for the package domains under `root`."""
    base = at(root, POWERCAP)
    if not base.is_dir():
        return None, f"no {POWERCAP} (the kernel exposes no RAPL here: a VM, a container or a non-x86 CPU)", ""
    packages = []
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        match = _PACKAGE.match(entry.name)
        if not match:
            continue
        name = _name(entry, reader)
        if name and not name.startswith("package"):
            continue  # psys: the whole platform, which contains the packages
        packages.append((int(match.group(1)), entry, name or entry.name))
    if not packages:
        return None, f"{POWERCAP} has no RAPL package domain (intel-rapl:N)", ""
    files, ranges, names, denied = [], [], [], []
    for _, entry, name in sorted(packages):
        energy = entry / "energy_uj"
        try:
            read_number(energy, reader)
        except PermissionError:
            denied.append(energy)
            continue
        except (OSError, ValueError) as exc:
            return None, f"cannot read {energy}: {exc}", ""
        try:
            top = read_number(entry / "max_energy_range_uj", reader)
        except (OSError, ValueError) as exc:
            return None, f"cannot read {entry / 'max_energy_range_uj'} (needed to undo a wraparound): {exc}", ""
        files.append(str(energy))
        ranges.append(top)
        names.append(name)
    if denied:
        # A sum over some packages would be a wrong figure, not a partial one.
        return None, f"{UNREADABLE}: {', '.join(str(p) for p in denied)}", FIX
    counter = Counter(family=CounterFamily.RAPL, scope=SCOPE_CPU, source="RAPL (powercap sysfs)",
                      detail=" + ".join(names), files=tuple(files), max_ranges=tuple(ranges),
                      resolution_j=RESOLUTION_J * len(files))
    return counter, "", ""


def _name(entry: Path, reader: FileReader) -> str:
    try:
        return reader(entry / "name").strip()
    except OSError:
        return ""


def read_rapl(counter: Counter, reader: FileReader = read_file) -> tuple[int, ...]:
    """Each package's counter in microjoules, as the kernel gives it (it wraps at its max range)."""
    try:
        return tuple(read_number(Path(f), reader) for f in counter.files)
    except (OSError, ValueError) as exc:
        raise EnergyReadError(f"RAPL counter unreadable: {exc}") from exc
