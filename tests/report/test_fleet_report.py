"""The fleet comparison: one row per host read from its own results.json, a failed host as a row with its reason,
links to each host's report, and a recommendation made from the measured numbers alone.

Every host is the recorded quick plan of demo:inefficient (tests/fixtures/recorded/inefficient-quick.json), as a
machine with other timings would have recorded it: its latencies scaled, its usable cores changed, and its
requirement checks made again by the planner's own checker against the requirements the fleet was given. Each host's
results.json and report.md are written to its folder and read back, as `planner fleet` fetches them. No plan is run.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from report_fixtures import full_report, section

from planner import units
from planner.advice.checks import requirement_checks
from planner.report.fleet import FLEET_DIR, FleetRow, write_fleet_report
from planner.results import PlanResults, Requirements, RunStatus, read_results, write_results
from planner.results.values import LatencyStats

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "inefficient-quick.json"
# What the fleet was asked to meet: the recorded best (73.2 ms p50, 182 MiB) meets it; 2.5 times as slow does not.
MET = Requirements(latency_ms=150.0, latency_percentile="p50", memory_budget_bytes=512 * units.MIB,
                   sources={"latency_ms": "flag", "memory_budget_bytes": "flag"})


@pytest.fixture(scope="module")
def recorded() -> PlanResults:
    """The recorded plan, typed."""
    return read_results(RECORDED)


def _scaled(stats: LatencyStats | None, factor: float) -> LatencyStats | None:
    """Timings `factor` times as long; the spread relative to the median (its interval, IQR/median) is kept."""
    if stats is None:
        return None
    times = {f.name: getattr(stats, f.name) * factor for f in dataclasses.fields(stats)
             if f.name.endswith("_ms") and getattr(stats, f.name) is not None}
    return dataclasses.replace(stats, **times)


def _machine(recorded: PlanResults, *, factor: float = 1.0, cores: int | None = None, memory: float = 1.0,
             requirements: Requirements = MET) -> PlanResults:
    """The recorded plan as another machine would have measured it, checked against `requirements`."""
    cands = tuple(dataclasses.replace(
        c, latency_ms=_scaled(c.latency_ms, factor),
        peak_memory_bytes=int(c.peak_memory_bytes * memory) if c.peak_memory_bytes is not None else None)
        for c in recorded.candidates)
    baseline = dataclasses.replace(recorded.baseline, latency_ms=_scaled(recorded.baseline.latency_ms, factor))
    hardware = recorded.hardware
    if cores is not None:
        hardware = dataclasses.replace(hardware, cpu=dataclasses.replace(hardware.cpu, usable_cores=cores))
    results = dataclasses.replace(recorded, candidates=cands, baseline=baseline, hardware=hardware,
                                  requirements=requirements)
    best = results.best
    return dataclasses.replace(results, requirement_checks=requirement_checks(results, requirements, subject=best),
                               requirement_checks_subject=best.label)


def _host(out: Path, folder: str, results: PlanResults, *, failure: str = "") -> FleetRow:
    """A host's fetched folder (results.json and its report.md), read back as the fleet reads it."""
    where = out / folder
    where.mkdir(parents=True)
    write_results(where / "results.json", results)
    (where / "report.md").write_text(full_report(results))
    port = 2200 + sum(1 for p in out.iterdir() if p.is_dir())  # each host its own test server's port
    return FleetRow(label=folder, host=f"planner@127.0.0.1:{port}",
                    results=read_results(where / "results.json"), report=where / "report.md", failure=failure)


def _rows(md: str) -> dict[str, list[str]]:
    """The Devices table's rows by device label, each as its cells."""
    rows = {}
    for line in section(md, "Devices").splitlines():
        match = re.match(r"^\| \*\*(.+?)\*\*", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    return rows


def _headers(md: str) -> list[str]:
    line = next(ln for ln in section(md, "Devices").splitlines() if ln.startswith("| Device"))
    return [c.strip() for c in line.split("|")[1:-1]]


def _cell(md: str, device: str, header: str) -> str:
    return _rows(md)[device][_headers(md).index(header)]


def _p50(results: PlanResults) -> str:
    return units.ms(results.best.p50)


@pytest.fixture
def fleet(tmp_path, recorded) -> tuple[Path, dict[str, PlanResults], str]:
    """Two hosts that differ only in cores (the 1-core one slower), a board too slow for the latency target, and a
    host that failed before it measured anything; the comparison written as `planner fleet` writes it."""
    out = tmp_path / "out"
    hosts = {"box-2-cores": _machine(recorded, cores=2), "box-1-core": _machine(recorded, factor=1.9, cores=1),
             "slow-board": _machine(recorded, factor=2.5, cores=4)}
    rows = [_host(out, name, results) for name, results in hosts.items()]
    rows.insert(2, FleetRow(label="Jetson", host="jetson", results=None, report=None,
                            failure="could not connect to jetson: connection refused (is sshd running?)"))
    path = write_fleet_report(rows, out)
    assert path == out / FLEET_DIR / "report.md"
    return out, hosts, path.read_text()


def test_every_host_is_a_row_with_its_own_measured_numbers(fleet):
    _, hosts, md = fleet
    assert list(_rows(md)) == ["box-2-cores", "box-1-core", "Jetson", "slow-board"]  # the fleet file's order
    for name, results in hosts.items():
        best = results.best
        assert _cell(md, name, "p50") == _p50(results)
        assert _cell(md, name, "Best candidate") == best.label
        assert _cell(md, name, "Peak memory") == units.size(best.peak_memory_bytes)
        assert _cell(md, name, "Model size") == units.size(best.size_bytes)
        assert _cell(md, name, "Status") == "complete"
        assert _cell(md, name, "Fidelity") == f"passed: cosine {units.cosine(best.fidelity.cosine)}, top-1 100%"
    # The two boxes differ in cores, and the 1-core one is measurably slower.
    assert "2 usable cores" in _cell(md, "box-2-cores", "Hardware")
    assert "1 usable core (" in _cell(md, "box-1-core", "Hardware")
    assert hosts["box-1-core"].best.p50 > 1.8 * hosts["box-2-cores"].best.p50
    isa = _cell(md, "box-2-cores", "ISA")
    assert "AVX-512 VNNI" in isa and "AVX2" in isa and "NEON" not in isa
    assert "median latency" in md.split("| Device")[0]  # p50 is explained before its first use


def test_requirements_met_or_missed_are_named_per_host(fleet):
    _, hosts, md = fleet
    assert _cell(md, "box-2-cores", "Requirements met").startswith("yes")
    assert _cell(md, "box-1-core", "Requirements met").startswith("yes")
    missed = _cell(md, "slow-board", "Requirements met")
    assert missed.startswith("**no**") and "latency < 150 ms p50" in missed and "memory" not in missed


def test_the_recommendation_is_the_fastest_host_that_meets_the_requirements(fleet):
    _, hosts, md = fleet
    where = section(md, "Where this model should run")
    fast, slow = hosts["box-2-cores"], hosts["box-1-core"]
    assert where.startswith(f"\n**Run it on box-2-cores** with **{fast.best.label}** (p50 {_p50(fast)})")
    assert f"box-1-core, the next fastest that meets them, takes {_p50(slow)}" in where
    assert f"{units.speedup(slow.best.p50 / fast.best.p50)} as fast" in where
    # Their medians' intervals (the recorded ±1.9%) lie far apart: the lead is no accident of noise.
    assert "more than measurement noise" in where
    # The board is out, and the numbers that put it out are its own check's.
    board = next(c for c in hosts["slow-board"].requirement_checks if c.name == "latency")
    assert f"slow-board ({_p50(hosts['slow-board'])} with" in where and board.margin in where


def test_a_failed_host_is_a_row_with_its_reason_and_the_others_go_on(fleet):
    _, _, md = fleet
    assert _cell(md, "Jetson", "Status") == "failed: could not connect to jetson: connection refused (is sshd running?)"
    assert _cell(md, "Jetson", "p50") == "not measured"
    assert _cell(md, "Jetson", "Host report") == "not written"
    assert "- Jetson: could not connect to jetson" in section(md, "Where this model should run")


def test_each_host_report_is_linked_relative_to_the_fleet_folder(fleet):
    out, hosts, md = fleet
    for name in hosts:
        link = re.fullmatch(r"\[report\.md\]\((.+)\)", _cell(md, name, "Host report"))
        assert link, _cell(md, name, "Host report")
        assert link.group(1) == f"../{name}/report.md"
        assert (out / FLEET_DIR / unquote(link.group(1))).resolve() == (out / name / "report.md").resolve()
    assert not [p.name for p in (out / FLEET_DIR).iterdir() if p.name != "report.md"]  # no temporary file left


def test_hosts_within_each_others_noise_are_called_so(tmp_path, recorded):
    out = tmp_path / "out"
    a, b = _machine(recorded), _machine(recorded, factor=1.01)
    md = write_fleet_report([_host(out, "box-a", a), _host(out, "box-b", b)], out).read_text()
    where = section(md, "Where this model should run")
    assert "**Run it on box-a**" in where
    assert "within measurement noise" in where and "either host will do" in where


def test_a_faster_host_that_misses_a_requirement_is_not_recommended(tmp_path, recorded):
    out = tmp_path / "out"
    # The faster host's runtime holds four times the memory: over the 512 MiB budget.
    greedy, lean = _machine(recorded, factor=0.8, memory=4.0), _machine(recorded, factor=1.5)
    md = write_fleet_report([_host(out, "greedy", greedy), _host(out, "lean", lean)], out).read_text()
    where = section(md, "Where this model should run")
    assert "**Run it on lean**" in where
    assert "It is the only host that meets the requirements." in where
    assert "greedy (" in where and "although it is faster: it misses memory" in where
    assert _cell(md, "greedy", "Requirements met").startswith("**no**: misses memory")


def test_when_no_host_meets_the_requirements_the_closest_is_named_with_its_margin(tmp_path, recorded):
    out = tmp_path / "out"
    strict = dataclasses.replace(MET, latency_ms=50.0)
    near, far = _machine(recorded, requirements=strict), _machine(recorded, factor=2.0, requirements=strict)
    md = write_fleet_report([_host(out, "far", far), _host(out, "near", near)], out).read_text()
    where = section(md, "Where this model should run")
    assert "**No host meets the requirements.** near came closest" in where
    check = next(c for c in near.requirement_checks if c.name == "latency")
    assert check.status == "missed" and check.margin in where  # by how much: the host's own check says
    assert "Run it on" not in where


def test_a_number_a_host_did_not_measure_is_shown_as_not_measured(tmp_path, recorded):
    out = tmp_path / "out"
    results = _machine(recorded)
    cands = list(results.candidates)
    best_index = results.ranking.best
    cands[best_index] = dataclasses.replace(cands[best_index], peak_memory_bytes=None, size_bytes=None)
    md = write_fleet_report([_host(out, "box", dataclasses.replace(results, candidates=tuple(cands)))],
                            out).read_text()
    assert _cell(md, "box", "Peak memory") == "not measured"
    assert _cell(md, "box", "Model size") == "not measured"
    assert "nothing to compare it with" in section(md, "Where this model should run")


def test_a_host_cut_off_mid_plan_shows_what_it_kept_and_why_it_stopped(tmp_path, recorded):
    out = tmp_path / "out"
    cut = dataclasses.replace(_machine(recorded), status=RunStatus.INTERRUPTED, candidates=(), ranking=None,
                              requirement_checks=())
    whole = _machine(recorded, factor=1.3)
    rows = [_host(out, "cut", cut, failure="the connection dropped and the host rebooted"),
            _host(out, "whole", whole)]
    md = write_fleet_report(rows, out).read_text()
    assert _cell(md, "cut", "Status") == "stopped: the connection dropped and the host rebooted (run interrupted)"
    assert _cell(md, "cut", "p50") == "not measured"
    assert "AMD EPYC" in _cell(md, "cut", "Hardware")  # what it did record is shown
    where = section(md, "Where this model should run")
    assert "**Run it on whole**" in where
    assert "- cut: the connection dropped and the host rebooted" in where


def test_no_host_with_a_measurement_gives_no_recommendation(tmp_path):
    out = tmp_path / "out"
    md = write_fleet_report([FleetRow("pi5", "pi5", None, None, failure="authentication refused:\n  no key accepted")],
                            out).read_text()
    where = section(md, "Where this model should run")
    assert "**No recommendation**" in where
    assert _cell(md, "pi5", "Status") == "failed: authentication refused: no key accepted"  # one line, one row
    assert "- pi5: authentication refused: no key accepted\n" in where


def test_a_host_whose_best_is_the_original_model_says_so(tmp_path, recorded):
    out = tmp_path / "out"
    results = _machine(recorded)
    as_is = dataclasses.replace(results, ranking=dataclasses.replace(results.ranking, order=(0,)))
    md = write_fleet_report([_host(out, "box", as_is)], out).read_text()
    original = as_is.candidates[0].label
    assert _cell(md, "box", "Best candidate") == f"{original}: the original model as it runs out of the box"
    assert _cell(md, "box", "Fidelity") == "the original itself"
    assert _cell(md, "box", "Model size") == units.size(as_is.model.size_bytes)


def test_without_an_interval_of_the_median_the_noise_is_not_guessed(tmp_path, recorded):
    out = tmp_path / "out"
    a, b = _machine(recorded), _machine(recorded, factor=1.01)
    cands = list(b.candidates)
    few = cands[b.ranking.best]
    cands[b.ranking.best] = dataclasses.replace(few, latency_ms=dataclasses.replace(few.latency_ms,
                                                                                     ci95_rel=float("inf")))
    b = dataclasses.replace(b, candidates=tuple(cands))
    md = write_fleet_report([_host(out, "box-a", a), _host(out, "box-b", b)], out).read_text()
    where = section(md, "Where this model should run")
    assert "cannot be said: box-b recorded too few samples" in where
    assert "overlap" not in where  # no claim either way



def test_equal_hosts_are_called_as_fast_and_the_finished_one_is_recommended(recorded, tmp_path):
    """Two hosts with the same numbers (a tie): no "1x as fast", and the host whose plan finished comes first."""
    same = _machine(recorded)
    rows = [_host(tmp_path, "cut-short", dataclasses.replace(same, status=RunStatus.INTERRUPTED), failure="cancelled"),
            _host(tmp_path, "finished", same)]
    text = write_fleet_report(rows, tmp_path).read_text()
    assert "**Run it on finished**" in text
    assert "the two are as fast as each other" in text and "1x as fast" not in text
