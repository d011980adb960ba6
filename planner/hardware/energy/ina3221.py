"""A Jetson's INA3221 power monitors: volts and amps per rail, sampled and integrated over time.

Two layouts: newer L4T (JetPack 5 and later) registers the chip with hwmon (`/sys/class/hwmon/hwmonN`
with `name` 'ina3221', `inN_label`, `inN_input` in mV, `currN_input` in mA); older L4T's ina3221x
driver has `/sys/bus/i2c/drivers/ina3221x/<bus>-<addr>/iio:deviceN` with `rail_name_N`,
`in_voltageN_input` (mV) and `in_currentN_input` (mA). A rail named like the module's input
(VDD_IN, POM_5V_IN) already contains the others, so it is used alone; otherwise the rails are summed.
"""

from __future__ import annotations

import re
from pathlib import Path

from planner.hardware._files import FileReader, at, read_file, read_number
from planner.hardware.energy.counter import SCOPE_SOC, Counter, CounterFamily, EnergyReadError, Rail

HWMON = "/sys/class/hwmon"
OLD_DRIVER = "/sys/bus/i2c/drivers/ina3221x"
SAMPLE_INTERVAL_S = 0.02
_INPUT_RAIL = re.compile(r"(^|_)(5V_)?IN$")


def find_ina3221(root: Path, reader: FileReader = read_file) -> tuple[Counter | None, str]:
    """(the rails as one counter, '') or (None, why not)."""
    rails = _hwmon_rails(root, reader) or _old_rails(root, reader)
    if not rails:
        return None, f"no INA3221 power monitor ({HWMON}/*/name 'ina3221' or {OLD_DRIVER}): not a Jetson"
    unreadable = []
    for rail in rails:
        try:
            _rail_watts(rail, reader)
        except EnergyReadError as exc:
            unreadable.append(f"{rail.name}: {exc}")
    if unreadable:
        return None, "INA3221 rails found but unreadable: " + "; ".join(unreadable)
    inputs = [r for r in rails if _INPUT_RAIL.search(r.name)]
    used = tuple(inputs[:1]) if inputs else tuple(rails)
    detail = (f"{used[0].name} (the module's input rail, which feeds the others)" if inputs
              else " + ".join(r.name for r in used))
    return Counter(family=CounterFamily.INA3221, scope=SCOPE_SOC, source="INA3221 rails (sysfs), sampled",
                   detail=detail, rails=used, sample_interval_s=SAMPLE_INTERVAL_S), ""


def _hwmon_rails(root: Path, reader: FileReader) -> list[Rail]:
    base = at(root, HWMON)
    rails: list[Rail] = []
    if not base.is_dir():
        return rails
    for chip in sorted(base.iterdir(), key=lambda p: p.name):
        try:
            if reader(chip / "name").strip() != "ina3221":
                continue
        except OSError:
            continue
        for label in sorted(chip.glob("in*_label")):
            n = label.name[2:-len("_label")]
            current = chip / f"curr{n}_input"
            if not current.exists():
                continue  # channel 7, 'sum of shunt voltages', has no current of its own
            rails.append(Rail(name=_label(label, reader), voltage=str(chip / f"in{n}_input"), current=str(current)))
    return rails


def _old_rails(root: Path, reader: FileReader) -> list[Rail]:
    base = at(root, OLD_DRIVER)
    rails: list[Rail] = []
    if not base.is_dir():
        return rails
    for device in sorted(base.glob("*/iio:device*")):
        for name in sorted(device.glob("rail_name_*")):
            n = name.name.rsplit("_", 1)[1]
            rails.append(Rail(name=_label(name, reader), voltage=str(device / f"in_voltage{n}_input"),
                              current=str(device / f"in_current{n}_input")))
    return rails


def _label(path: Path, reader: FileReader) -> str:
    try:
        return reader(path).strip() or path.name
    except OSError:
        return path.name


def _rail_watts(rail: Rail, reader: FileReader) -> float:
    try:
        return read_number(Path(rail.voltage), reader) * read_number(Path(rail.current), reader) / 1e6
    except (OSError, ValueError) as exc:
        raise EnergyReadError(f"cannot read {rail.voltage} or {rail.current}: {exc}") from exc


def read_ina3221_watts(counter: Counter, reader: FileReader = read_file) -> float:
    """The power the counter's rails draw now, in watts (mV x mA / 1e6)."""
    return sum(_rail_watts(rail, reader) for rail in counter.rails)
