"""Report: the interaction table (2x2 with measured cells and the factor) and Phase 3's measured redesign."""

from __future__ import annotations

from report_fixtures import full_report, whole


def _pair(*, redesign: bool) -> dict:
    return {
        "architecture": "redesign (needs retraining)" if redesign else "align channels to 8 (exact)",
        "hardware": "openvino bf16 latency 2t",
        "cells": [
            {"cell": "baseline", "label": "torch eager fp32 (cpu)", "p50_ms": 200.0, "speedup": 1.0},
            {"cell": "architecture", "label": "arch", "p50_ms": 50.0, "speedup": 4.0},
            {"cell": "hardware", "label": "hw", "p50_ms": 100.0, "speedup": 2.0},
            {"cell": "combined", "label": "both", "p50_ms": 20.0, "speedup": 10.0},
        ],
        "factor": 1.25, "verdict": "amplify", "needs_retraining": redesign,
        "method": "each cell timed in a fresh worker",
    }


def test_interaction_section_shows_the_table_and_the_arithmetic(results: dict) -> None:
    results["interactions"] = [_pair(redesign=False)]
    md = full_report(results)
    assert "## Interaction of architecture and hardware" in md
    assert "| original architecture | 200 ms (1x) | 100 ms (2x) |" in md
    assert "| align channels to 8 (exact) | 50 ms (4x) | 20 ms (10x) |" in md
    assert "= 10x / (4x x 2x) = **1.25**: amplify" in md


def _phase3(md: str) -> str:
    return md.split("### Phase 3")[1].split("### Where the steps land")[0]


def test_phase_3_states_the_measured_gains_of_a_redesign(results: dict) -> None:
    results["interactions"] = [_pair(redesign=True)]
    phase3 = _phase3(full_report(results))
    step = next(line for line in phase3.splitlines()
                if "**redesign (needs retraining)**" in line and line[:1].isdigit())
    assert "speed measured, accuracy not" in step
    # Its only figures are the interaction's: alone over that step's own baseline timing, and together.
    assert "4x over the baseline as the interaction step timed it (p50 50 ms" in step
    assert "together with openvino bf16 latency 2t: p50 20 ms, 10x" in step


def test_a_measured_redesign_is_one_step_in_phase_3_with_its_interaction_gains(results: dict) -> None:
    results["interactions"] = [_pair(redesign=True)]
    results["candidates"] = [*results["candidates"], *whole({"candidates": [{
        "plugin": "architecture.redesign", "label": "redesign (needs retraining)", "precision": "fp32",
        "status": "rejected", "reason": "needs retraining: speed measured, accuracy not",
        "config": {"architecture": "redesign", "transform": {"plugin": "architecture.redesign"}},
        "latency_ms": {"p50_ms": 40.0}, "speedup": 5.0, "fidelity": {"cosine": -0.02},
        "declared": {"phase": 3, "arithmetic": "structural", "runtime": "pytorch", "transforms_model": True}}]})[
            "candidates"]]
    phase3 = _phase3(full_report(results))
    lines = phase3.splitlines()
    steps = [i for i, line in enumerate(lines) if line[:1].isdigit() and "**redesign" in line]
    assert len(steps) == 1
    step = lines[steps[0]]
    # Its own measurement (5x, as the candidates table ranks it) applied on top of the steps before, as a projection;
    # the combined figure only the interaction step measured; never the interaction's second timing of it alone.
    assert "projection, not measured: its 5x on pytorch applied to the step before" in step
    together = next(line for line in lines[steps[0]:] if line.startswith("   - Measured together"))
    assert "with openvino bf16 latency 2t: p50 20 ms, 10x" in together
    assert "4x" not in step and "architecture gain" not in phase3
    risk = next(line for line in lines[steps[0]:] if line.startswith("   - Effort"))
    assert "cosine" not in risk  # untrained weights: their agreement with the original says nothing


def test_a_failed_cell_says_why_and_no_factor_is_made_up(results: dict) -> None:
    pair = _pair(redesign=False)
    pair["cells"][3] = {"cell": "combined", "label": "both", "status": "failed", "reason": "export broke"}
    pair["factor"], pair["verdict"] = None, ""
    results["interactions"] = [pair]
    md = full_report(results)
    assert "failed: export broke" in md and "Interaction factor: not computed" in md


def test_no_interactions_no_section(results: dict) -> None:
    assert "## Interaction of architecture and hardware" not in full_report(results)


def test_cells_timed_under_load_put_the_verdict_in_doubt(results: dict) -> None:
    pair = _pair(redesign=False)
    pair["cells"][1]["disturbed"] = True
    results["interactions"] = [pair]
    md = full_report(results)
    assert "50 ms (4x) (timed under load)" in md
    assert "Cells timed under load (architecture)" in md and "re-run on an idle machine" in md


def test_the_section_links_its_figure_written_beside_the_report(results: dict, tmp_path) -> None:
    """A 2x2 grouped bar chart of the four cells' p50, with the factor and verdict in its title."""
    from planner.report import render_report_files

    results["interactions"] = [_pair(redesign=False)]
    render_report_files(results, tmp_path)
    md = (tmp_path / "evidence.md").read_text()
    section = md.split("## Interaction of architecture and hardware")[1].split("\n## ")[0]
    assert "![Interaction: the four cells' p50](figures/interaction.png)" in section
    png = (tmp_path / "figures" / "interaction.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000


def test_the_figure_title_carries_the_factor_and_verdict(results: dict) -> None:
    from planner.report.data import ReportData
    from planner.report.figdata import interaction_bars

    results["interactions"] = [_pair(redesign=False)]
    (bars,) = interaction_bars(ReportData(results))
    assert bars.title.endswith("factor 1.25: amplify")
    assert bars.p50_ms == ((200.0, 100.0), (50.0, 20.0))


def test_no_measured_cell_no_figure_and_the_section_says_why(results: dict) -> None:
    pair = _pair(redesign=False)
    pair["cells"] = [{**c, "p50_ms": None, "status": "failed", "reason": "export broke"} for c in pair["cells"]]
    pair["factor"], pair["verdict"] = None, ""
    results["interactions"] = [pair]
    md = full_report(results, figures={})
    assert "Interaction: the four cells' p50 figure skipped: no cell of any interaction pair has a measured p50" in md
