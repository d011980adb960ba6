"""J/inference in every report table that lists candidates: a figure where a counter measured one, otherwise
'unavailable' (or why there is none) with one footnote that says why and what would make a counter readable."""

from __future__ import annotations

from report_fixtures import full_report, whole
from test_report_edge_sections import _results as edge_results
from test_report_interaction import _pair

from planner.hardware.boards import get_profile, project
from planner.report.data import ReportData
from planner.report.sections import compression, device_targets

FIX = "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj"
UNREADABLE = {"available": False, "reason": "no CPU energy counter: the RAPL energy counters exist but only root "
                                            "may read them (since the 2020 PLATYPUS fix, CVE-2020-8694)",
              "fix": FIX}
RAPL = {"available": True, "scope": "CPU package", "source": "RAPL (powercap sysfs)", "detail": "package-0",
        "idle_w": 11.5, "idle_spread_w": 0.2, "idle_window_s": 2.0}


def _with_energy(results: dict, source: dict, energies: list[dict]) -> dict:
    results["baseline"]["energy_source"] = source
    for cand, energy in zip(results["candidates"], energies):
        cand["energy"] = energy
    return results


def _unavailable() -> dict:
    return {"status": "unavailable", "scope": "", "reason": f"{UNREADABLE['reason']}. To make it readable: {FIX}"}


def _table(md: str, header_start: str) -> list[str]:
    """The markdown table whose header starts so: its header, separator and rows."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_unreadable_counter_reads_unavailable_in_every_row_with_the_fix(results: dict) -> None:
    n = len(results["candidates"])
    md = full_report(_with_energy(results, UNREADABLE, [_unavailable()] * n))
    rows = _table(md, "| Rank | Candidate")
    assert "J/inference" in rows[0].split("|")[6]
    assert len(rows) == n + 2 and all(r.split("|")[6].strip() == "unavailable" for r in rows[2:])
    note = next(line for line in md.splitlines() if line.startswith("J/inference: unavailable"))
    assert "CVE-2020-8694" in note and FIX in note and "Never estimated from a TDP" in note
    assert f"- **Energy counter**: unavailable: {UNREADABLE['reason']}" in md  # the hardware section
    assert "**Energy**: unavailable:" in md  # the summary


def test_measured_figures_sit_beside_p50_with_their_basis(results: dict) -> None:
    n = len(results["candidates"])
    energies = [{"status": "measured", "joules": 0.0382, "scope": "CPU package", "gross_j": 9.0, "idle_j": 4.6,
                 "window_s": 0.4, "calls": 128}] * (n - 1) + [
        {"status": "below resolution", "scope": "CPU package",
         "reason": "0.0004 J over idle in 3 calls is within the counter's resolution and the idle draw's noise"}]
    md = full_report(_with_energy(results, RAPL, energies))
    rows = _table(md, "| Rank | Candidate")[2:]
    cells = [r.split("|")[6].strip() for r in rows]
    assert cells.count("38.2 mJ") == n - 1 and "below resolution" in cells
    note = next(line for line in md.splitlines() if line.startswith("J/inference: CPU package energy"))
    assert "RAPL (powercap sysfs) (package-0), net of idle 11.5 W" in note
    assert "below resolution: 0.0004 J over idle in 3 calls" in note
    assert "38.2 mJ/inference, measured" in md  # the roadmap's steps


def test_edge_tables_show_energy_and_the_board_is_not_measured() -> None:
    results = edge_results()
    results["candidates"][1]["energy"] = {"status": "measured", "joules": 0.0021, "scope": "SoC rails (PMIC)"}
    rpi5 = get_profile("rpi5")
    row = {"label": "onnxruntime int8 dynamic (cpu, 2t)", "measured_p50_ms": 2.0,
           **project(rpi5, flops=2e6, weight_bytes=420_000, int8=True)}
    results["edge_device"] = {"profile": rpi5.to_info(), "candidates": [row]}
    data = ReportData(whole(results))
    targets = "\n".join(device_targets.render(data))
    assert "| Candidate | p50 | J/inference | Peak memory |" in targets
    assert "| onnxruntime int8 dynamic (cpu, 2t) | 2 ms | 2.1 mJ |" in targets
    assert "| torch eager fp32 (cpu) | 5 ms | not recorded |" in targets  # a file written before energy
    assert "| J/inference here | J/inference on board |" in targets
    assert "| 2.1 mJ | not measured on the board |" in targets
    squeezed = "\n".join(compression.render(data))
    assert "| p50 | J/inference |" in squeezed and "| 2 ms | 2.1 mJ |" in squeezed


def test_interaction_cells_carry_their_energy(results: dict) -> None:
    pair = _pair(redesign=False)
    for cell in pair["cells"]:
        cell["energy"] = {"status": "unavailable", "reason": "no CPU energy counter"}
    results["interactions"] = [pair]
    results["baseline"]["energy_source"] = {"available": False, "reason": "no CPU energy counter"}
    md = full_report(results)
    assert "| 50 ms (4x); J/inference unavailable |" in md
