"""Reading a counter over a window: deltas, RAPL's wraparound undone once, a counter that goes backwards or
vanishes gives no figure (never a negative energy), sampled rails integrated, idle power in two halves."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from energy_trees import RAPL_RANGE_UJ, jetson_hwmon_tree, rapl_tree, set_rapl
from hardware_fake_nvml import FakeNvml, a100
from hardware_trees import write

from planner.hardware.energy import find_counter, measure_idle, open_meter
from planner.hardware.energy.meter import SampledMeter, counter_delta


def _clock(*times: float):
    values = iter(times)
    return lambda: next(values)


def _no_pmic(command):
    raise FileNotFoundError("vcgencmd")


def test_rapl_window_sums_packages(tmp_path: Path) -> None:
    root = rapl_tree(tmp_path, packages=2, energy_uj=1_000_000)
    meter = open_meter(find_counter(root, vcgencmd=_no_pmic).counter, clock=_clock(10.0, 12.0))
    meter.start()
    set_rapl(root, 0, 31_000_000)  # +30 J
    set_rapl(root, 1, 11_000_000)  # +10 J
    reading = meter.stop()
    assert reading.joules == pytest.approx(40.0) and reading.seconds == 2.0 and reading.watts == pytest.approx(20.0)
    assert reading.note == ""


def test_rapl_wraparound_is_undone_once(tmp_path: Path) -> None:
    """A package that reads lower at the end passed max_energy_range_uj: the energy is what lay across it."""
    root = rapl_tree(tmp_path, energy_uj=RAPL_RANGE_UJ - 2_000_000)
    meter = open_meter(find_counter(root, vcgencmd=_no_pmic).counter, clock=_clock(0.0, 1.0))
    meter.start()
    set_rapl(root, 0, 3_000_000)
    reading = meter.stop()
    assert reading.joules == pytest.approx(5.0)
    assert "wrapped around" in reading.note


def test_counter_without_a_range_going_backwards_is_invalid() -> None:
    """NVML's counter has no wraparound point: a lower reading is a reset, and no figure comes of it."""
    nvml = FakeNvml([a100(energy_mj=[9_000_000, 9_000_000, 4_000_000])])
    counter = find_counter(Path("/nonexistent-root"), device="cuda", nvml_module=nvml, vcgencmd=_no_pmic).counter
    meter = open_meter(counter, nvml_module=nvml)
    meter.start()
    reading = meter.stop()
    meter.close()
    assert reading.joules is None and not reading.valid
    assert "went backwards" in reading.reason
    assert nvml.shutdown_calls == nvml.init_calls == 2  # the probe's session and the meter's


def test_nvml_window_in_joules() -> None:
    nvml = FakeNvml([a100(energy_mj=[0, 1_000, 3_500])])  # the probe reads the first
    counter = find_counter(Path("/nonexistent-root"), device="cuda", nvml_module=nvml, vcgencmd=_no_pmic).counter
    meter = open_meter(counter, nvml_module=nvml, clock=_clock(0.0, 0.5))
    meter.start()
    reading = meter.stop()
    assert reading.joules == pytest.approx(2.5) and reading.resolution_j == 1e-3


def test_counter_delta_never_negative() -> None:
    assert counter_delta([5.0], [3.0])[0] is None
    assert counter_delta([5.0, 1.0], [6.0, 0.5], ranges=[0, 0])[0] is None
    # A 'before' above the range is not a wrap this counter can make: no figure either.
    assert counter_delta([20.0], [3.0], ranges=[10])[0] is None
    joules, reason, _ = counter_delta([8.0], [3.0], ranges=[10], scale=1e-6)
    assert joules == pytest.approx(5e-6) and reason == ""


def test_rapl_file_vanishing_mid_window_is_invalid(tmp_path: Path) -> None:
    root = rapl_tree(tmp_path)
    meter = open_meter(find_counter(root, vcgencmd=_no_pmic).counter)
    meter.start()
    (root / "sys/class/powercap/intel-rapl:0/energy_uj").unlink()
    reading = meter.stop()
    assert reading.joules is None and "RAPL counter unreadable" in reading.reason


def test_sampled_rails_integrate_power_over_time(tmp_path: Path) -> None:
    """Constant INA3221 power integrates to power x the sampled span exactly."""
    counter = find_counter(jetson_hwmon_tree(tmp_path)).counter
    meter = open_meter(counter)
    meter.start()
    import time

    time.sleep(0.1)
    reading = meter.stop()
    assert reading.valid and reading.seconds >= 0.09
    assert reading.joules == pytest.approx(5.072 * 1.520 * reading.seconds)
    assert reading.resolution_j == pytest.approx(5.072 * 1.520 * counter.sample_interval_s)


def test_sampled_linear_ramp_is_exact() -> None:
    """Trapezoids are exact for power rising linearly in time: P = 2t from t=1 to t=2 gives 3 J."""
    ticks = itertools.count()
    times = [1.0, 2.0, 3.0]

    def clock() -> float:
        return times[min(next(ticks) // 2, 2)]  # each sample reads the clock once for power and once for time

    def watts() -> float:
        return 2 * clock()

    meter = SampledMeter(watts, interval_s=60.0, clock=clock)  # the thread never fires: start, stop samples only
    meter.start()
    reading = meter.stop()
    assert reading.seconds == pytest.approx(1.0)  # two samples: t=1 and t=2
    assert reading.joules == pytest.approx(3.0)


def test_a_rail_failing_mid_window_is_invalid(tmp_path: Path) -> None:
    root = jetson_hwmon_tree(tmp_path)
    meter = open_meter(find_counter(root).counter)
    meter.start()
    write(root, "/sys/class/hwmon/hwmon3/curr1_input", "garbage\n")
    reading = meter.stop()
    assert reading.joules is None and "cannot read" in reading.reason


def test_idle_power_in_two_halves(tmp_path: Path) -> None:
    """Idle = total energy over total time; its noise = how far the halves' mean powers differ."""
    root = rapl_tree(tmp_path, energy_uj=0)
    steps = iter([2_000_000, 5_000_000])  # 2 J in the first half, 3 J in the second: 4 W then 6 W

    def sleep(seconds: float) -> None:
        set_rapl(root, 0, next(steps))

    meter = open_meter(find_counter(root, vcgencmd=_no_pmic).counter, clock=_clock(0.0, 0.5, 0.5, 1.0))
    idle = measure_idle(meter, 1.0, sleep=sleep)
    assert idle.watts == pytest.approx(5.0) and idle.spread_w == pytest.approx(2.0) and idle.seconds == 1.0
