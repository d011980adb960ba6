"""planner.units: one rounding policy, and every surface (report, advice, CLI, TUI) prints a value the same way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planner import units
from planner.advice._facts import ThroughputPoint, sweep_text
from planner.advice.requirements import defaults_for, load_requirements
from planner.cli.commands import format_ceilings
from planner.hardware.profile import EDGE_DEVICE_CLASSES, DeviceClass
from planner.report import fmt as report_fmt
from planner.tui import formatting as tui_fmt


@pytest.mark.parametrize(("value", "text"), [
    (50, "50"), (50.0, "50"), (412.4, "412"), (38.24, "38.2"), (1.25, "1.25"), (2.004, "2"),
    (0.04271, "0.0427"), (0.0004999, "0.0005"), (27489.3, "27,489"), (1234567, "1,234,567"),
    (999.7, "1,000"), (9.996, "10"), (99.96, "100"), (0, "0"), (-3.14159, "-3.14"),
])
def test_three_significant_figures_trailing_zeros_dropped(value, text) -> None:
    assert units.sig(value) == text


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), True, "12"])
def test_missing_values_print_the_callers_text(value) -> None:
    assert units.ms(value) == units.MISSING == "—"
    assert units.size(value, missing=units.NOT_MEASURED) == "not measured"


def test_each_unit() -> None:
    assert units.ms(0.0427) == "0.0427 ms"
    assert units.seconds(12.49) == "12.5 s" and units.seconds(0.5) == "500 ms"
    assert [units.size(n) for n in (512, 1536, 46.9e6, 1 << 30)] == ["512 B", "1.5 KiB", "44.7 MiB", "1 GiB"]
    assert units.mib(744 * units.MIB) == "744"
    assert units.rate(27489.3) == "27,489 samples/s" and units.rate(8.4) == "8.4 samples/s"
    assert units.flops(4.8e9) == "4.8 GFLOP" and units.flop_rate(1.482e11) == "148 GFLOP/s"
    assert units.bandwidth(25.6e9) == "25.6 GB/s" and units.bandwidth(5.12e8) == "512 MB/s"
    assert units.pct(0.387) == "38.7%" and units.pct(1.0) == "100%"
    assert units.speedup(1.847) == "1.85x" and units.speedup(0.02481) == "0.0248x"
    assert units.count(25557032) == "25,557,032"
    assert units.accuracy(0.97531) == "97.53%"


def test_cosine_below_one_never_prints_as_one() -> None:
    assert units.cosine(0.9999998) == "0.9999998"
    assert units.cosine(1.0) == "1.00000"
    assert units.cosine(0.9999999999999998) == "1.00000"  # equal outputs, summed in floating point


def test_50_ms_prints_the_same_on_every_surface() -> None:
    expected = units.ms(50.0)
    assert expected == "50 ms"
    assert report_fmt.ms(50.0) == expected
    assert tui_fmt.ms(50.0) == expected
    assert sweep_text((ThroughputPoint(1, 50.0, 20.0, None),)) == f"batch 1: {expected}, {units.rate(20.0)}"
    req = load_requirements(device_class="cpu_server", overrides={"latency_ms": 50})
    assert req.latency_text == f"< {expected} p95"


def test_bytes_and_rates_print_the_same_on_every_surface() -> None:
    size = 744.1 * units.MIB
    assert report_fmt.size(size) == tui_fmt.size(size) == units.size(size) == "744 MiB"
    assert report_fmt.rate(3.873) == tui_fmt.rate(3.873) == "3.87 samples/s"
    assert report_fmt.speedup(1.3338) == tui_fmt.speedup(1.3338) == "1.33x"


def test_cli_ceilings_use_the_policy() -> None:
    ceilings = SimpleNamespace(source="measured", peak_flops={"fp32": 1.482e11}, bandwidth_bytes_per_s=9.84e9,
                               ridge_point=lambda precision="fp32": 1.482e11 / 9.84e9)
    assert format_ceilings(ceilings) == ("Ceilings (measured): peak fp32 148 GFLOP/s; memory bandwidth "
                                         "9.84 GB/s; ridge point 15.1 (fp32) FLOP/byte")


def test_report_keeps_prose_for_missing_values() -> None:
    assert report_fmt.ms(None) == "not measured"
    assert report_fmt.ms(None, missing="n/a") == "n/a"


def test_edge_device_classes_are_the_boards() -> None:
    assert EDGE_DEVICE_CLASSES == {DeviceClass.JETSON, DeviceClass.RASPBERRY_PI, DeviceClass.ARM_BOARD}
    # results.json holds the plain string; it must test as a member.
    assert "raspberry_pi" in EDGE_DEVICE_CLASSES and "cpu_server" not in EDGE_DEVICE_CLASSES
    assert defaults_for(DeviceClass.RASPBERRY_PI) == defaults_for("raspberry_pi")
    assert defaults_for("jetson").tier == defaults_for(DeviceClass.DESKTOP_GPU).tier


def test_one_rule_makes_a_count_of_a_number() -> None:
    from planner import units

    assert units.whole(3) == 3 and units.whole(3.0) == 3
    # 2.5 is not a count (one reader used to truncate it to 2, another refused it), nor is a bool, NaN or text.
    assert [units.whole(v) for v in (2.5, True, float("nan"), float("inf"), "3", None)] == [None] * 6


def test_an_input_range_keeps_the_numbers_it_was_given() -> None:
    from planner.results.view import model_inputs

    (ids, x) = model_inputs({"inputs": [
        {"name": "ids", "shape": [1, 8], "dtype": "int64", "low": 0, "high": 30522},
        {"name": "x", "shape": [1, 4], "dtype": "float32", "low": -1.5, "high": 1.5}]})
    assert (ids.low, ids.high) == (0, 30522) and (x.low, x.high) == (-1.5, 1.5)
