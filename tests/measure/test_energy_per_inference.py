"""Energy per inference: the plan's counter read around a candidate's latency timing, net of idle power, in the
measuring worker; never a negative figure, never a figure inside the counter's resolution, never invented."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from energy_trees import rapl_tree, set_rapl

from planner.hardware.energy import Reading
from planner.hardware.energy.counter import Counter, CounterFamily
from planner.measure.energy import EnergyWindow, per_inference, prepare_source
from planner.results.energy_values import EnergySource, EnergyStatus

RAPL = Counter(family=CounterFamily.RAPL, scope="CPU package", source="RAPL (powercap sysfs)", files=("x",),
               max_ranges=(1,), resolution_j=1e-4)
SOURCE = EnergySource(available=True, scope="CPU package", source="RAPL (powercap sysfs)", idle_w=10.0,
                      idle_spread_w=0.5, idle_window_s=2.0, counter=RAPL)


def test_net_of_idle_per_call() -> None:
    """(30 J - 10 W x 2 s) / 100 calls = 0.1 J per inference."""
    energy = per_inference(SOURCE, Reading(30.0, 2.0, resolution_j=1e-4), calls=100, device="cpu")
    assert energy is not None and energy.status is EnergyStatus.MEASURED
    assert energy.joules == pytest.approx(0.1) and energy.idle_j == pytest.approx(20.0) and energy.calls == 100
    assert energy.scope == "CPU package"


def test_within_the_idle_noise_is_below_resolution() -> None:
    """20.5 J over 2 s at 10 +- 0.5 W idle: 0.5 J net is inside 2 x 0.5 W x 2 s of noise, so no figure."""
    energy = per_inference(SOURCE, Reading(20.5, 2.0, resolution_j=1e-4), calls=100, device="cpu")
    assert energy.status is EnergyStatus.BELOW_RESOLUTION and energy.joules is None
    assert "within the counter's resolution" in energy.reason


def test_less_than_idle_is_invalid_not_negative() -> None:
    energy = per_inference(SOURCE, Reading(5.0, 2.0), calls=100, device="cpu")
    assert energy.status is EnergyStatus.INVALID and energy.joules is None
    assert "less than the idle figure" in energy.reason


def test_a_bad_reading_keeps_its_reason() -> None:
    energy = per_inference(SOURCE, Reading(None, 2.0, reason="the counter went backwards (9 then 4)"),
                           calls=100, device="cpu")
    assert energy.status is EnergyStatus.INVALID and "went backwards" in energy.reason


def test_unavailable_and_not_covered() -> None:
    none = EnergySource(reason="no CPU energy counter: no /sys/class/powercap")
    assert per_inference(none, None, calls=10, device="cpu").status is EnergyStatus.UNAVAILABLE
    assert per_inference(none, None, calls=10, device="cpu").reason == none.reason
    gpu = per_inference(SOURCE, None, calls=10, device="cuda")
    assert gpu.status is EnergyStatus.NOT_COVERED and "does not see work on cuda" in gpu.reason
    assert per_inference(None, None, calls=10, device="cpu") is None  # a job with no energy source at all


def test_window_around_the_work(tmp_path: Path) -> None:
    """In process: the idle figure from a quiet counter, then work that moves the counter inside the window."""
    root = rapl_tree(tmp_path, energy_uj=0)
    source = prepare_source("cpu", quick=True, root=root)
    assert source.available and source.idle_w == 0.0 and source.idle_window_s >= 0.9
    with EnergyWindow(source, "cpu") as window:
        set_rapl(root, 0, 2_500_000)  # the work: 2.5 J
    energy = per_inference(source, window.reading, calls=50, device="cpu")
    assert energy.status is EnergyStatus.MEASURED and energy.joules == pytest.approx(0.05)


def test_window_outside_the_scope_reads_nothing(tmp_path: Path) -> None:
    source = prepare_source("cpu", quick=True, root=rapl_tree(tmp_path))
    with EnergyWindow(source, "cuda:0") as window:
        pass
    assert window.reading is None


def test_this_machine_has_no_energy_figure() -> None:
    """No counter here: no idle window is spent, the source says why, and no figure is estimated."""
    if Path("/sys/class/powercap").exists():
        pytest.skip("this machine exposes powercap")
    source = prepare_source("cpu", quick=True)
    assert not source.available and source.idle_w is None
    assert "no /sys/class/powercap" in source.reason


def _tiny_job(tiny, source: EnergySource):
    from planner.measure.evaluate import MeasureJob
    from planner.plugins import CandidateSpec, ModelRef, Precision

    spec = CandidateSpec(plugin="torch.eager", label="torch eager fp32 (cpu)", config={"device": "cpu"},
                         precision=Precision.FP32)
    return MeasureJob(model=ModelRef.of(tiny), spec=spec, quick=True, fidelity_batches=1, energy=source)


@pytest.mark.worker
def test_a_real_plan_here_carries_this_machines_unavailable(tiny_plan) -> None:
    """The session's real quick plan on this machine: every timed candidate's energy says 'unavailable' and why
    (read from the shared plan rather than another worker: its candidates were measured by real workers)."""
    from planner.results import read_results
    from planner.results.energy_view import energy_cell

    if Path("/sys/class/powercap").exists():
        pytest.skip("this machine exposes powercap")
    out, code, _ = tiny_plan
    timed = [c for c in read_results(out / "results.json").candidates if c.latency_ms is not None]
    assert code == 0 and timed
    for c in timed:
        assert c.energy is not None and c.energy.status is EnergyStatus.UNAVAILABLE, c.label
        assert "no /sys/class/powercap" in c.energy.reason and energy_cell(c) == "unavailable"


@pytest.mark.worker
def test_worker_meters_its_latency_timing(tiny, tmp_path: Path) -> None:
    """A real worker reads a recorded RAPL tree around its timing while the 'hardware' advances it by 1 mJ every
    millisecond: the figure is the counter's gain over the window, idle (0 W here) subtracted, per call timed."""
    from planner.measure.evaluate import measure

    root = rapl_tree(tmp_path, energy_uj=0)
    source = prepare_source("cpu", quick=True, root=root)
    stop = threading.Event()

    def hardware() -> None:
        uj = 0
        while not stop.wait(0.001):
            uj += 1000
            set_rapl(root, 0, uj)

    thread = threading.Thread(target=hardware, daemon=True)
    thread.start()
    try:
        result, _ = measure(_tiny_job(tiny, source))
    finally:
        stop.set()
        thread.join()
    energy = result.energy
    assert energy is not None and energy.status is EnergyStatus.MEASURED, energy
    assert energy.calls >= result.latency_ms.samples > 0
    assert energy.joules * energy.calls == pytest.approx(energy.gross_j)
    assert 0 < energy.gross_j <= 1.0 * energy.window_s * 1.5  # about 1 W, never more than the writer gave
