"""The report's fidelity cells and words follow the output's kind: no top-1 for a dense map or a sequence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from report_fixtures import FIGURE_LINKS, full_report, section

from planner.codec import from_data, to_data
from planner.measure.fidelity import DEFAULT_GATES, compare
from planner.plugins import Precision
from planner.report.data import ReportData
from planner.report.sections.candidates import fidelity_cells, fidelity_headers
from planner.results import CandidateResult, Status, fidelity_view
from planner.results.values import Fidelity


def _judged(precision: str, ref: np.ndarray, out: np.ndarray, kind: str | None = None) -> dict:
    fid = compare([ref], [out], kind=kind)
    _, decided_by = DEFAULT_GATES[Precision(precision)].judge(fid)
    data = to_data(fid)
    data["decided_by"] = decided_by
    return data


def _page() -> np.ndarray:
    rng = np.random.default_rng(0)
    ref = np.full((4, 1, 16, 16), 0.02) + rng.uniform(0, 0.01, size=(4, 1, 16, 16))
    ref[:, :, 4:12, 4:12] = 0.9
    return ref


def _with_fidelity(results: dict, make) -> dict:
    for cand in results["candidates"]:
        fid = cand.get("fidelity")
        if isinstance(fid, dict) and not fid.get("reference"):
            cand["fidelity"] = make(str(cand.get("precision") or "fp32"))
    return results


def _candidates_table(text: str) -> list[str]:
    return [line for line in section(text, "All candidates").splitlines() if line.startswith("|")][:20]


def test_a_dense_map_report_shows_map_iou_and_no_top1(results):
    ref = _page()
    out = ref + 1e-4
    text = full_report(_with_fidelity(results, lambda p: _judged(p, ref, out)), figures=FIGURE_LINKS)
    table = _candidates_table(text)
    assert "| Error | Agreement |" in table[0] and "Top-1" not in table[0] and "Cosine" not in table[0]
    assert any("map IoU 1.00" in row and "1.0e-04 (0-1 scale)" in row for row in table)
    assert not any("top-1" in row for row in table)
    # The check is explained in words on first use, in the map's terms.
    assert "the output is a dense map, a value per pixel (read from the output's shape (batch, 1, 16, 16))" in text
    assert "their IoU (pixels both mark over pixels either marks)" in text
    risk = next(line for line in section(text, "Summary").splitlines() if line.startswith("- **Accuracy risk**"))
    assert "top-1" not in risk and "cosine" not in risk and "map IoU 1.00 (thresholded at 0.5)" in risk


def test_a_map_with_no_foreground_says_so(results):
    ref = np.full((2, 1, 8, 8), 1e-6)
    text = full_report(_with_fidelity(results, lambda p: _judged(p, ref, ref * 1.5)), figures=FIGURE_LINKS)
    assert any("no foreground here" in row for row in _candidates_table(text))
    # Nothing on these inputs could fail a candidate: the check says it cannot judge, and what would settle it.
    assert "cannot judge: the map has no foreground on these inputs" in text


def test_a_sequence_report_shows_per_position_agreement(results):
    rng = np.random.default_rng(1)
    ref = rng.normal(0, 1, size=(2, 10, 6))
    ref[:, :, 0] += 5.0
    out = ref.copy()
    out[0, 3, 0] = -5.0  # one of 20 positions reads another class
    text = full_report(_with_fidelity(results, lambda p: _judged(p, ref, out)), figures=FIGURE_LINKS)
    table = _candidates_table(text)
    # One of the two sequences reads differently: the table gives the whole sequences, the words both tests.
    assert any("sequences 50%" in row for row in table) and not any("top-1" in row for row in table)
    assert "whole sequences unchanged 50.0% (95% interval" in text
    # A sequence might be CTC text: the report says how to judge the decoded text instead.
    assert "--output-kind NAME=ctc" in text


def test_a_ctc_report_says_how_much_text_changes(results):
    rng = np.random.default_rng(2)
    ref = rng.normal(0, 0.3, size=(40, 12, 6))
    ref[:, :, 0] += 4.0  # mostly blanks
    ref[:, 2, 3] += 9.0  # every line reads a '3' ...
    ref[:10, 7, 5] += 9.0  # ... and a quarter of them a '5' after it
    out = ref.copy()
    out[:10, 7, 5] -= 9.0  # the candidate loses the '5': 10 of 40 lines change, 10 of 50 characters
    text = full_report(_with_fidelity(results, lambda p: _judged(p, ref, out, kind="ctc")), figures=FIGURE_LINKS)
    table = _candidates_table(text)
    assert any("text same 75%, 20% chars" in row for row in table)
    risk = next(line for line in section(text, "Summary").splitlines() if line.startswith("- **Accuracy risk**"))
    assert "the decoded text changes in 25% of 40 sequences (95% interval" in risk and "20% of characters" in risk
    assert "decoded as CTC" in text and "character error rate" in text


def test_class_scores_keep_the_cosine_and_top1_columns(fixture_results):
    candidates = ReportData(fixture_results).run.candidates
    assert fidelity_headers(candidates) == ("Cosine", "Top-1")
    ref = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 1.0]])
    cand = replace(candidates[1], fidelity=from_data(_judged("bf16", ref, ref), Fidelity))
    assert fidelity_cells(cand) == ("1.00000", "100%")
    # In a table that mixes kinds each cell names its own test.
    assert fidelity_cells(cand, by_kind=True) == ("cosine 1.00000", "top-1 100%")


def test_a_regression_output_reads_as_relative_error():
    ref = np.linspace(1.0, 2.0, 8).reshape(8, 1)
    fid = _judged("fp32", ref, ref * 1.002)
    assert fidelity_view.agreement_cell(fid) == "rel. error 0.002"
    assert fidelity_view.phrases(fid)[0] == "relative error 0.002"
    cand = CandidateResult(plugin="x", label="x", config={}, precision="fp32", status=Status.OK,
                           fidelity=from_data(fid, Fidelity))
    rule = fidelity_view.rule([cand])
    assert "a set of values compared as numbers (regression)" in rule and "fp32: relative error at most 0.01" in rule
