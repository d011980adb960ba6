"""The report shows the INT8 roof beside fp32 and bf16, each candidate's share of its own roof, and a re-measure
kept out of the cache."""

from __future__ import annotations

from report_fixtures import whole

from planner.report import figdata
from planner.report.data import ReportData
from planner.report.sections import candidates, hardware

G = 1e9
CEILINGS = {"peak_flops": {"fp32": 235 * G, "bf16": 1000 * G, "int8": 2000 * G}, "bandwidth_bytes_per_s": 50 * G,
            "source": "measured", "device": "cpu",
            "details": {"timestamp": "2026-11-25T10:00:00+00:00", "mode": "quick", "repeats": 3,
                        "measured_while": "idle", "other_cores": [0.01],
                        "int8_method": "torch._int_mm: an int8 x int8 GEMM summed in int32"}}


def _text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_the_hardware_section_shows_the_int8_roof_and_its_ridge() -> None:
    out = _text(hardware.ceilings_lines(ReportData(whole({"ceilings": CEILINGS}))))
    assert "| int8 | 2 TFLOP/s | 40 |" in out  # 2 TOP/s over 50 GB/s
    assert "| bf16 | 1 TFLOP/s | 20 |" in out
    assert "The int8 roof: int8 counts integer operations (2 per multiply-add) as FLOPs" in out
    assert "measured with torch._int_mm" in out
    assert "int8_method" not in out


def test_a_kept_out_remeasure_is_a_warning_and_a_slower_precision_a_finding() -> None:
    details = {**CEILINGS["details"],
               "kept_out_note": "a re-measure under load (0.99 cores busy) was kept out of the cache: fp32 194 "
                                "GFLOP/s, bf16 139 GFLOP/s, bandwidth 22 GB/s; the cached figures (idle) are used",
               "bf16_slower": "bf16 GEMM measured 139 GFLOP/s, below fp32's 194 GFLOP/s: on this CPU bf16 runs slower "
                              "than fp32 (measured; the ISA flag alone does not make it pay)"}
    out = _text(hardware.ceilings_lines(ReportData(whole({"ceilings": {**CEILINGS, "details": details}}))))
    assert "Warning: a re-measure under load (0.99 cores busy) was kept out of the cache" in out
    when = next(line for line in out.splitlines() if line.startswith("When and how:"))
    assert "bf16 GEMM measured 139 GFLOP/s, below fp32's 194 GFLOP/s: on this CPU bf16 runs slower than fp32" in when
    assert "Warning: bf16" not in out
    assert "kept_out_note" not in out and "bf16_slower" not in out


def test_an_older_files_failed_precision_flag_is_not_shown_as_a_failure() -> None:
    """Planners before issue 34 called a slower bf16 'a failed measurement': that wording is not repeated."""
    details = {**CEILINGS["details"],
               "bf16_failed": "bf16 measured 139 GFLOP/s, below fp32 194 GFLOP/s on a CPU that runs bf16 natively: a "
                              "failed measurement (other work slowed it), so it was not cached"}
    out = _text(hardware.ceilings_lines(ReportData(whole({"ceilings": {**CEILINGS, "details": details}}))))
    assert "failed" not in out and "bf16_failed" not in out


def _cand(label: str, precision: str, p50: float, share: dict | None = None) -> dict:
    return {"label": label, "plugin": label.lower(), "precision": precision, "status": "ok",
            "latency_ms": {"p50_ms": p50, "samples": 20}, **({"roof_share": share} if share else {})}


def test_candidates_state_their_share_of_their_own_roof() -> None:
    int8 = {"precision": "int8", "attained_flops_per_s": 400 * G, "peak_flops_per_s": 2000 * G, "share": 0.2}
    fp32 = {"precision": "fp32", "attained_flops_per_s": 90 * G, "peak_flops_per_s": 235 * G, "share": 90 / 235}
    data = ReportData(whole({"ceilings": {**CEILINGS, "peak_flops": {"fp32": 235 * G}, "details": {
        "int8_omitted": "CPU lacks an int8 dot-product instruction"}},
        "candidates": [_cand("Baseline", "fp32", 80.0, fp32), _cand("INT8", "int8", 18.0, int8),
                       _cand("Old INT8", "int8", 20.0)]}))
    out = _text(candidates.roof_lines(data, data.run.candidates))
    assert "- **INT8**: 20% of the INT8 roof (400 GFLOP/s of 2 TFLOP/s)" in out
    assert "- **Baseline**: 38.3% of the FP32 roof" in out
    assert "- **Old INT8**: no INT8 roof (CPU lacks an int8 dot-product instruction)" in out


def test_a_share_above_the_roof_says_the_ceiling_is_wrong() -> None:
    above = {"precision": "int8", "attained_flops_per_s": 3.6e12, "peak_flops_per_s": 2e12, "share": None,
             "warning": "attains 3.6 TFLOP/s, above the measured int8 roof of 2 TFLOP/s: the ceiling was measured "
                        "while the machine was busy; run `planner detect --ceilings --refresh`"}
    data = ReportData(whole({"ceilings": CEILINGS, "candidates": [_cand("INT8", "int8", 2.0, above)]}))
    out = _text(candidates.roof_lines(data, data.run.candidates))
    assert "INT8 roof: attains 3.6 TFLOP/s, above the measured int8 roof" in out and "180%" not in out


def test_no_share_recorded_no_roof_lines() -> None:
    """Files written before the share was recorded keep their report."""
    data = ReportData(whole({"ceilings": CEILINGS, "candidates": [_cand("INT8", "int8", 18.0)]}))
    assert candidates.roof_lines(data, data.run.candidates) == []


def test_the_roofline_figure_draws_the_other_roofs() -> None:
    data = ReportData(whole({"ceilings": CEILINGS, "baseline": {"layers": [
        {"key": "conv1", "flops": 1e9, "time_ms": 10.0, "intensity": 30.0}]}}))
    rl = figdata.roofline(data)
    assert rl is not None and rl.peak_label == "fp32"
    assert rl.other_roofs == (("bf16", 1000 * G), ("int8", 2000 * G))
    assert "Dashed: the bf16 and int8 roofs" in figdata.caption(data, figdata.ROOFLINE)


def test_the_roofline_figure_is_drawn_with_the_int8_roof(tmp_path) -> None:
    from planner.report.figures import draw_figures

    results = {"ceilings": CEILINGS, "baseline": {"layers": [
        {"key": "conv1", "flops": 1e9, "time_ms": 10.0, "intensity": 30.0}]}}
    drawn, notes = draw_figures(whole(results), tmp_path / "figures", relative_to=tmp_path)
    assert "roofline" in drawn and "roofline" not in notes
    assert (tmp_path / drawn["roofline"]).stat().st_size > 0
