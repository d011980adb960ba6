"""Recorded-format energy counter trees and outputs: RAPL powercap, Jetson INA3221 (hwmon and the older
ina3221x driver) and a Raspberry Pi 5's `vcgencmd pmic_read_adc`, written into a temp root.

The layouts and units are the kernel's and the firmware's: powercap's energy_uj and max_energy_range_uj in
microjoules, hwmon's inN_input in millivolts and currN_input in milliamps, the ina3221x driver's
in_voltageN_input / in_currentN_input, and the PMIC's `<RAIL>_A current(N)=…A` / `<RAIL>_V volt(M)=…V` lines.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hardware_trees import write

from planner.hardware._files import read_file

# A desktop Intel part: one package with core/uncore sub-domains, the platform (psys) domain and the MMIO copy.
RAPL_RANGE_UJ = 262143328850


def rapl_tree(root: Path, *, packages: int = 1, energy_uj: int = 123_456_789, psys: bool = True) -> Path:
    """A /sys/class/powercap tree with `packages` package domains (each reading `energy_uj`)."""
    base = "/sys/class/powercap"
    for n in range(packages):
        write(root, f"{base}/intel-rapl:{n}/name", f"package-{n}\n")
        write(root, f"{base}/intel-rapl:{n}/energy_uj", f"{energy_uj}\n")
        write(root, f"{base}/intel-rapl:{n}/max_energy_range_uj", f"{RAPL_RANGE_UJ}\n")
        write(root, f"{base}/intel-rapl:{n}/intel-rapl:{n}:0/name", "core\n")
        write(root, f"{base}/intel-rapl:{n}/intel-rapl:{n}:0/energy_uj", "4567\n")
        write(root, f"{base}/intel-rapl:{n}:0/name", "core\n")  # the sysfs class also lists sub-domains flat
        write(root, f"{base}/intel-rapl:{n}:0/energy_uj", "4567\n")
    if psys:
        write(root, f"{base}/intel-rapl:{packages}/name", "psys\n")
        write(root, f"{base}/intel-rapl:{packages}/energy_uj", "999999999\n")
        write(root, f"{base}/intel-rapl:{packages}/max_energy_range_uj", f"{RAPL_RANGE_UJ}\n")
    write(root, f"{base}/intel-rapl-mmio:0/name", "package-0\n")
    write(root, f"{base}/intel-rapl-mmio:0/energy_uj", f"{energy_uj}\n")
    return root


def set_rapl(root: Path, package: int, energy_uj: int) -> None:
    """Move one package's counter (as the hardware would between two reads).

    Written to a temporary file and renamed over the old one: a reader in another process never sees the file
    half written (empty), as it never does in sysfs, where each read is one snapshot of the counter.
    """
    path = root / f"sys/class/powercap/intel-rapl:{package}/energy_uj"
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(f"{energy_uj}\n")
    os.replace(temporary, path)


def root_only(root: Path) -> None:
    """Make every energy_uj mode 0400, as the kernel has since the PLATYPUS fix (CVE-2020-8694)."""
    for path in (root / "sys/class/powercap").rglob("energy_uj"):
        path.chmod(stat.S_IRUSR)


def as_user(path: Path) -> str:
    """Read a file as an ordinary user would: refused without the 'others may read' bit (tests run as root,
    which the kernel would let read anything)."""
    if not path.stat().st_mode & stat.S_IROTH:
        raise PermissionError(13, "Permission denied", str(path))
    return read_file(path)


def jetson_hwmon_tree(root: Path) -> Path:
    """A Jetson Orin NX (JetPack 5+): ina3221 under hwmon, channels VDD_IN, VDD_CPU_GPU_CV, VDD_SOC and the
    shunt-sum channel 7 (no current of its own), beside an unrelated hwmon chip."""
    write(root, "/sys/class/hwmon/hwmon0/name", "soc_thermal\n")
    write(root, "/sys/class/hwmon/hwmon0/temp1_input", "41000\n")
    chip = "/sys/class/hwmon/hwmon3"
    write(root, f"{chip}/name", "ina3221\n")
    for n, (label, mv, ma) in enumerate((("VDD_IN", 5072, 1520), ("VDD_CPU_GPU_CV", 5064, 424),
                                         ("VDD_SOC", 5064, 592)), start=1):
        write(root, f"{chip}/in{n}_label", f"{label}\n")
        write(root, f"{chip}/in{n}_input", f"{mv}\n")
        write(root, f"{chip}/curr{n}_input", f"{ma}\n")
    write(root, f"{chip}/in7_label", "sum of shunt voltages\n")
    write(root, f"{chip}/in7_input", "46\n")
    return root


def jetson_old_tree(root: Path) -> Path:
    """A Jetson AGX Xavier on older L4T: the ina3221x driver's iio rails GPU, CPU, SOC (no input rail)."""
    device = "/sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0"
    for n, (name, mv, ma) in enumerate((("GPU", 19200, 150), ("CPU", 19200, 300), ("SOC", 19200, 450))):
        write(root, f"{device}/rail_name_{n}", f"{name}\n")
        write(root, f"{device}/in_voltage{n}_input", f"{mv}\n")
        write(root, f"{device}/in_current{n}_input", f"{ma}\n")
        write(root, f"{device}/in_power{n}_input", f"{mv * ma // 1000}\n")
    return root


# `vcgencmd pmic_read_adc` on a Raspberry Pi 5, in the firmware's format (indices of a rail's current and
# voltage lines differ; EXT5V_V is the 5 V input, with no current line).
PI5_PMIC = """ 3V7_WL_SW_A current(0)=0.04102560A
   3V3_SYS_A current(1)=0.09768000A
   1V8_SYS_A current(2)=0.19047600A
  DDR_VDD2_A current(3)=0.01953600A
  DDR_VDDQ_A current(4)=0.00000000A
   1V1_SYS_A current(5)=0.17094000A
   0V8_SW_A current(6)=0.31258560A
  VDD_CORE_A current(7)=0.80000000A
   3V3_DAC_A current(17)=0.00012210A
   3V3_ADC_A current(18)=0.00018315A
   0V8_AON_A current(16)=0.00244200A
      HDMI_A current(22)=0.02564100A
 3V7_WL_SW_V volt(8)=3.71300000V
   3V3_SYS_V volt(9)=3.31200000V
   1V8_SYS_V volt(10)=1.80000000V
  DDR_VDD2_V volt(11)=1.10400000V
  DDR_VDDQ_V volt(12)=0.60000000V
   1V1_SYS_V volt(13)=1.11000000V
    0V8_SW_V volt(14)=0.80000000V
  VDD_CORE_V volt(15)=0.75000000V
   3V3_DAC_V volt(20)=3.31000000V
   3V3_ADC_V volt(21)=3.30700000V
   0V8_AON_V volt(19)=0.80000000V
      HDMI_V volt(23)=5.08600000V
     EXT5V_V volt(24)=5.09100000V
      BATT_V volt(25)=0.00000000V
"""

# A Pi 4's firmware has no such command.
PI4_PMIC = 'error=1 error_msg="Command not registered"\n'


def pmic_watts(output: str = PI5_PMIC) -> float:
    """What the sample's paired rails draw, computed independently of the parser: sum of V x A by name."""
    amps, volts = {}, {}
    for line in output.splitlines():
        name, _, value = line.strip().partition(" ")
        number = float(value.split("=")[1][:-1])
        (amps if name.endswith("_A") else volts)[name[:-2]] = number
    return sum(volts[n] * amps[n] for n in amps if n in volts)
