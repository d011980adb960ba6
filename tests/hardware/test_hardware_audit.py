"""Machine facts the measurement audit reads: each from a fake tree, and "not readable" where a machine lacks it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from planner.hardware import audit as probes


def _write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def _board(root: Path) -> Path:
    """A small ARM board: cpufreq with a schedutil governor, a hot thermal zone, SMT off."""
    _write(root, "/sys/devices/system/cpu/smt/control", "notsupported\n")
    for cpu in (0, 1):
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        _write(root, f"{base}/cpufreq/scaling_governor", "schedutil\n")
        _write(root, f"{base}/cpufreq/scaling_cur_freq", "1200000\n")
        _write(root, f"{base}/cpufreq/cpuinfo_max_freq", "1800000\n")
        _write(root, f"{base}/thermal_throttle/core_throttle_count", str(cpu * 3))
    zone = "/sys/class/thermal/thermal_zone0"
    _write(root, f"{zone}/type", "cpu-thermal\n")
    _write(root, f"{zone}/temp", "86000\n")
    _write(root, f"{zone}/trip_point_0_type", "passive\n")
    _write(root, f"{zone}/trip_point_0_temp", "85000\n")
    _write(root, f"{zone}/trip_point_1_type", "critical\n")
    _write(root, f"{zone}/trip_point_1_temp", "105000\n")
    return root


def test_a_board_tree_is_read(tmp_path: Path) -> None:
    root = _board(tmp_path)
    assert probes.smt(root) == "not supported"
    assert probes.governor(root, [0, 1]) == "schedutil"
    assert probes.clock_mhz(root, [0, 1]) == (1200.0, 1800.0)
    assert probes.throttle_count(root, [0, 1]) == 3
    (zone,) = probes.thermal_zones(root)
    assert (zone.name, zone.temp_c, zone.passive_trip_c) == ("cpu-thermal", 86.0, 85.0)
    assert probes.hot_zones([zone]) == ["cpu-thermal at 86 °C (throttles from 85 °C)"]


def test_a_machine_without_these_files_says_not_readable(tmp_path: Path) -> None:
    assert probes.smt(tmp_path).startswith("not readable")
    assert probes.governor(tmp_path, [0]).startswith("not readable")
    assert probes.clock_mhz(tmp_path, [0]) == (None, None)
    assert probes.throttle_count(tmp_path, [0]) is None
    assert probes.thermal_zones(tmp_path) == []


def test_smt_from_topology_when_no_control_file(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0,32\n")
    assert probes.smt(tmp_path) == "on (2 threads per core)"


def test_raspberry_pi_throttle_bits() -> None:
    outputs = {"vcgencmd": "throttled=0x50005\n"}
    raw, now, since = probes.pi_throttled(lambda argv: outputs.get(argv[0]))  # type: ignore[misc]
    assert raw == "0x50005"
    assert now == ["under-voltage", "throttled"]
    assert since == ["under-voltage", "throttled"]
    assert probes.pi_throttled(lambda argv: None) is None


def test_jetson_power_mode() -> None:
    assert probes.jetson_power_mode(lambda argv: "NV Power Mode: MAXN\n0\n") == "MAXN"
    assert probes.jetson_power_mode(lambda argv: None) is None


def _nvml(reasons: int | None) -> SimpleNamespace:
    def fail(*_):
        raise RuntimeError("not supported")

    return SimpleNamespace(
        NVML_CLOCK_SM=1, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "gpu0",
        nvmlDeviceGetClockInfo=lambda h, kind: 1410, nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetCurrentClocksThrottleReasons=(lambda h: reasons) if reasons is not None else fail)


def test_gpu_clocks_and_slowdowns_through_nvml() -> None:
    gpu = probes.gpu_clocks(0, _nvml(0x40 | 0x1))  # hardware thermal slowdown, and idle (not a slow-down)
    assert gpu is not None and (gpu.sm_mhz, gpu.max_sm_mhz) == (1410, 1980)
    assert gpu.slowdowns == ("hardware thermal slowdown",)
    unread = probes.gpu_clocks(0, _nvml(None))
    assert unread is not None and unread.slowdowns == () and "not readable" in unread.note


def test_no_nvml_gpu_gives_none() -> None:
    def refuse():
        raise RuntimeError("driver not loaded")

    assert probes.gpu_clocks(0, SimpleNamespace(nvmlInit=refuse)) is None
