"""Finding an energy counter: RAPL, NVML, Jetson INA3221 and Raspberry Pi 5 PMIC, from recorded-format trees and
fakes, and this machine's own answer (it has no counter at all)."""

from __future__ import annotations

from pathlib import Path

import pytest
from energy_trees import (
    PI4_PMIC,
    PI5_PMIC,
    RAPL_RANGE_UJ,
    as_user,
    jetson_hwmon_tree,
    jetson_old_tree,
    pmic_watts,
    rapl_tree,
    root_only,
)
from hardware_fake_nvml import FakeNvml, NVMLError_LibraryNotFound, a100

from planner.hardware.energy import CounterFamily, find_counter
from planner.hardware.energy.ina3221 import read_ina3221_watts
from planner.hardware.energy.pmic import parse_rails, read_pmic_watts
from planner.hardware.energy.rapl import read_rapl


def _pmic(output: str):
    return lambda command: output


def test_this_machine_has_no_counter_and_says_why() -> None:
    """The build machine exposes no /sys/class/powercap and no hwmon: 'unavailable' with the real reason."""
    if Path("/sys/class/powercap").exists() or Path("/sys/class/hwmon").exists():
        pytest.skip("this machine exposes powercap or hwmon; the no-counter case is covered by the fixture trees")
    probe = find_counter()
    assert probe.counter is None
    assert probe.reason.startswith("no CPU energy counter: no /sys/class/powercap")
    assert any("not a Jetson" in note for note in probe.notes)


def test_rapl_sums_package_domains_only(tmp_path: Path) -> None:
    """Two packages are summed; their core sub-domains, the platform (psys) domain and the MMIO copy are not."""
    probe = find_counter(rapl_tree(tmp_path, packages=2), vcgencmd=_pmic(PI4_PMIC))
    counter = probe.counter
    assert counter is not None and counter.family is CounterFamily.RAPL
    assert counter.scope == "CPU package" and counter.detail == "package-0 + package-1"
    assert [Path(f).parent.name for f in counter.files] == ["intel-rapl:0", "intel-rapl:1"]
    assert counter.max_ranges == (RAPL_RANGE_UJ, RAPL_RANGE_UJ)
    assert read_rapl(counter) == (123_456_789, 123_456_789)
    assert counter.covers("cpu") and not counter.covers("cuda")


def test_root_only_rapl_is_unavailable_with_the_fix(tmp_path: Path) -> None:
    """The counters exist but an ordinary user may not read them: unavailable, the CVE named, the chmod given."""
    root = rapl_tree(tmp_path)
    root_only(root)
    probe = find_counter(root, reader=as_user, vcgencmd=_pmic(PI4_PMIC))
    assert probe.counter is None
    assert "only root may read them" in probe.reason and "CVE-2020-8694" in probe.reason
    assert probe.fix.startswith("sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj")


def test_no_package_domain_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "sys/class/powercap").mkdir(parents=True)
    probe = find_counter(tmp_path, vcgencmd=_pmic(PI4_PMIC))
    assert probe.counter is None and "no RAPL package domain" in probe.reason


def test_nvml_counter_for_gpu_work() -> None:
    """GPU work is measured by NVML's total-energy counter (millijoules), which needs no root."""
    nvml = FakeNvml([a100(energy_mj=[5_000_000])])
    probe = find_counter(Path("/nonexistent-root"), device="cuda", nvml_module=nvml, vcgencmd=_pmic(PI4_PMIC))
    counter = probe.counter
    assert counter is not None and counter.family is CounterFamily.NVML
    assert counter.scope == "GPU" and counter.detail == "GPU 0 (NVIDIA A100-SXM4-80GB)"
    assert nvml.shutdown_calls == nvml.init_calls == 1


def test_gpu_without_the_counter_says_why() -> None:
    """A pre-Volta GPU answers NotSupported; no driver at all says so."""
    old = find_counter(Path("/nonexistent-root"), device="cuda", nvml_module=FakeNvml([a100()]),
                       vcgencmd=_pmic(PI4_PMIC))
    assert old.counter is None and "total-energy counter: NVML: not supported" in old.reason
    none = find_counter(Path("/nonexistent-root"), device="cuda", vcgencmd=_pmic(PI4_PMIC),
                        nvml_module=FakeNvml(init_error=NVMLError_LibraryNotFound()))
    assert none.counter is None and "no NVIDIA driver is installed" in none.reason


def test_jetson_hwmon_uses_the_input_rail(tmp_path: Path) -> None:
    """VDD_IN feeds the other rails, so it is used alone: 5072 mV x 1520 mA."""
    probe = find_counter(jetson_hwmon_tree(tmp_path), device="cuda")
    counter = probe.counter
    assert counter is not None and counter.family is CounterFamily.INA3221
    assert counter.scope == "SoC rails" and [r.name for r in counter.rails] == ["VDD_IN"]
    assert "VDD_IN (the module's input rail" in counter.detail
    assert read_ina3221_watts(counter) == pytest.approx(5.072 * 1.520)
    assert counter.covers("cuda") and counter.covers("cpu")


def test_jetson_old_driver_sums_its_rails(tmp_path: Path) -> None:
    """Older L4T's ina3221x rails with no input rail among them are summed."""
    counter = find_counter(jetson_old_tree(tmp_path)).counter
    assert counter is not None and counter.detail == "GPU + CPU + SOC"
    assert read_ina3221_watts(counter) == pytest.approx(19.2 * (0.150 + 0.300 + 0.450))


def test_pi5_pmic_pairs_rails_by_name(tmp_path: Path) -> None:
    """Rails pair by name (their current and volt indices differ); the 5 V input with no current is left out."""
    rails = parse_rails(PI5_PMIC)
    assert "EXT5V" not in rails and "BATT" not in rails
    assert rails["VDD_CORE"] == (0.75, 0.8)
    probe = find_counter(tmp_path, vcgencmd=_pmic(PI5_PMIC))
    counter = probe.counter
    assert counter is not None and counter.family is CounterFamily.PMIC and counter.scope == "SoC rails (PMIC)"
    assert read_pmic_watts(counter, _pmic(PI5_PMIC)) == pytest.approx(pmic_watts())


def test_pi4_has_no_pmic_readings(tmp_path: Path) -> None:
    """An older Pi's firmware refuses the command: the probe quotes it and falls back to RAPL (none here)."""
    probe = find_counter(tmp_path, vcgencmd=_pmic(PI4_PMIC))
    assert probe.counter is None
    assert any("Command not registered" in note for note in probe.notes)
