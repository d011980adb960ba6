"""The report's figures: what the decision and candidates figures plot (sorted, the winner, the target and each
candidate's fidelity verdict), and that every figure draws from a plan with one candidate or none."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from report_fixtures import whole

from planner.report import figdata
from planner.report.data import ReportData
from planner.report.fidelity_verdict import Verdict
from planner.report.figures import draw_figures, figure
from planner.results import SCHEMA_VERSION

DEFAULT_SOURCE = "default for Server (device performance targets)"


def _cand(label: str, p50: float, *, status: str = "ok", exact: bool = False, reference: bool = False,
          p95: float | None = None) -> dict:
    return {"label": label, "status": status, "latency_ms": {"p50_ms": p50, "p95_ms": p95},
            "fidelity": {"exact": exact, "reference": reference}}


def _plan(target_ms: float | None = 50.0, source: str = DEFAULT_SOURCE) -> dict:
    """A plan of five measured candidates listed out of speed order (the baseline first, as a plan records
    them), one that failed, and the ranking's best in the middle of the list."""
    cands = [_cand("torch eager", 8.0, reference=True, p95=9.0),
             _cand("OpenVINO INT8", 2.0, status="unconfirmed", p95=2.5),
             _cand("ONNX Runtime", 4.0, exact=True, p95=4.4),
             _cand("ONNX Runtime INT8", 3.0, p95=3.3),
             _cand("OpenVINO bf16", 5.0, status="rejected"),
             {"label": "torch compile", "status": "failed"}]
    results = {"schema_version": SCHEMA_VERSION, "candidates": cands, "ranking": {"order": [3, 2, 0]},
               "baseline": {"latency_ms": {"p50_ms": 8.0}}}
    if target_ms is not None:
        results["requirements"] = {"latency_ms": target_ms, "latency_percentile": "p95",
                                   "sources": {"latency_ms": source}}
    return whole(results)


def test_the_decision_figure_plots_every_measured_candidate_fastest_first() -> None:
    bars = figdata.ranked_bars(ReportData(_plan()))
    assert [b.label for b in bars.bars] == ["OpenVINO INT8", "ONNX Runtime INT8", "ONNX Runtime", "OpenVINO bf16",
                                            "torch eager"]
    assert [b.p50_ms for b in bars.bars] == sorted(b.p50_ms for b in bars.bars)


def test_the_winner_is_the_rankings_best_not_the_fastest() -> None:
    bars = figdata.ranked_bars(ReportData(_plan())).bars
    assert [b.label for b in bars if b.is_winner] == ["ONNX Runtime INT8"]
    assert not bars[0].is_winner  # the fastest is not established, so it was not ranked


def test_each_candidate_gets_its_fidelity_verdict() -> None:
    verdicts = {b.label: b.verdict for b in figdata.ranked_bars(ReportData(_plan())).bars}
    assert verdicts == {"OpenVINO INT8": Verdict.NOT_ESTABLISHED, "ONNX Runtime INT8": Verdict.PASSED,
                        "ONNX Runtime": Verdict.EXACT, "OpenVINO bf16": Verdict.REJECTED,
                        "torch eager": Verdict.BASELINE}


def test_the_target_line_says_its_value_percentile_and_whose_it_is() -> None:
    default = figdata.ranked_bars(ReportData(_plan(target_ms=6.0)))
    assert (default.target.ms, default.target.percentile, default.target.stated) == (6.0, "p95", False)
    assert default.target.source == DEFAULT_SOURCE
    assert default.target.words == "default target (you set none): p95 under 6 ms"
    assert default.target_side == "on"
    # The bars are p50; the tick each candidate gets is at the target's own percentile.
    assert [b.tail_ms for b in default.bars] == [2.5, 3.3, 4.4, None, 9.0]
    yours = figdata.ranked_bars(ReportData(_plan(target_ms=6.0, source="flag")))
    assert yours.target.stated and yours.target.words == "your target: p95 under 6 ms"
    assert "your latency target, p95 under 6 ms" in figdata.caption(ReportData(_plan(6.0, "flag")), figdata.DECISION)
    assert "not set by you (default for Server" in figdata.caption(ReportData(_plan(6.0)), figdata.DECISION)


def test_a_target_far_beyond_every_bar_is_said_at_the_edge_not_drawn() -> None:
    far = figdata.ranked_bars(ReportData(_plan(target_ms=500.0)))
    assert far.target_side == "right" and not far.log_scale  # 2 to 9 ms stay on a linear axis
    assert "far off the scale to the right" in figdata.caption(ReportData(_plan(target_ms=500.0)), figdata.DECISION)


def test_values_spanning_decades_get_a_log_axis() -> None:
    results = _plan()
    results["candidates"][1]["latency_ms"]["p50_ms"] = 0.05
    assert figdata.ranked_bars(ReportData(results)).log_scale


def test_no_requirements_no_target_line() -> None:
    bars = figdata.ranked_bars(ReportData(_plan(target_ms=None)))
    assert bars.target is None and bars.target_side == ""


@pytest.mark.parametrize("name", [figdata.DECISION, figdata.CANDIDATES])
def test_the_bar_figures_list_candidates_fastest_first_with_the_winner_in_bold(name: str) -> None:
    fig = figure(name, _plan(target_ms=6.0))
    try:
        ax = fig.axes[0]
        labels = [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]
        assert labels == ["OpenVINO INT8", "ONNX Runtime INT8", "ONNX Runtime", "OpenVINO bf16",
                          "torch eager (baseline)"]
        bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
        assert bold == ["ONNX Runtime INT8"]
        assert any(line.get_linestyle() == "--" for line in ax.get_lines())  # the target line
    finally:
        plt.close(fig)


def _drawn(results: dict, tmp_path) -> tuple[dict[str, str], dict[str, str]]:
    drawn, notes = draw_figures(results, tmp_path / "figures", relative_to=tmp_path)
    for path in drawn.values():
        assert (tmp_path / path).stat().st_size > 0
    return drawn, notes


def test_figures_draw_from_a_plan_with_one_candidate(tmp_path) -> None:
    results = whole({"schema_version": SCHEMA_VERSION, "ranking": {"order": [0]},
                     "candidates": [_cand("torch eager", 8.0, reference=True)],
                     "baseline": {"latency_ms": {"p50_ms": 8.0}},
                     "requirements": {"latency_ms": 5.0, "sources": {"latency_ms": "flag"}}})
    drawn, notes = _drawn(results, tmp_path)
    assert notes == {}
    assert {figdata.DECISION, figdata.LATENCY} <= set(drawn)
    assert figdata.CANDIDATES not in drawn  # only the baseline: nothing to compare it with


def test_figures_draw_from_a_plan_with_no_candidate(tmp_path) -> None:
    drawn, notes = _drawn(whole({"candidates": [], "baseline": {"latency_ms": {"p50_ms": 8.0}}}), tmp_path)
    assert notes == {} and figdata.DECISION not in drawn and figdata.LATENCY in drawn
    reason = figdata.missing_reason(ReportData(whole({"candidates": []})), figdata.DECISION)
    assert reason and reason.startswith("no candidate has a measured latency")
    assert not (tmp_path / "figures" / "decision.png").exists()


def test_the_caption_says_when_no_candidate_has_the_targets_percentile() -> None:
    results = _plan(target_ms=6.0)
    for cand in results["candidates"]:
        if cand.get("latency_ms"):
            cand["latency_ms"]["p95_ms"] = None
    caption = figdata.caption(ReportData(results), figdata.DECISION)
    assert "No candidate was timed long enough to state its p95" in caption and "Ticks:" not in caption
