"""Partial, empty and oddly shaped results still render, and say what is missing and why."""

from __future__ import annotations

import copy
import json

import pytest
from hardware_profiles import gpu_server, h100
from report_fixtures import FIGURE_LINKS, full_report

from planner.codec import to_data
from planner.errors import PlannerError
from planner.report import figdata
from planner.report.data import ReportData


def test_interrupted_run_says_partial(partial_results) -> None:
    text = full_report(partial_results, figures=FIGURE_LINKS)
    assert ("**Partial report: interrupted — interrupted by Ctrl-C: the results hold what was "
            "measured**") in text
    assert "Checklist: not recorded: the run's status is interrupted" in text
    assert "No candidates: not recorded: the run's status is interrupted" in text
    # What the baseline measured is still reported in full.
    assert "| p50 | 268 ms |" in text
    assert "**Whole model: compute-bound.**" in text


def test_partial_run_figures_follow_the_data(partial_results) -> None:
    text = full_report(partial_results, figures=FIGURE_LINKS)
    assert "![Latency distribution](figures/latency.png)" in text
    assert "![Roofline with the model's layers](figures/roofline.png)" in text
    assert "*Candidate p50 latency figure skipped: no candidate has a measured latency" in text


def test_empty_candidate_list(results) -> None:
    results["candidates"] = []
    results["best"] = None
    results["ranking"] = []
    text = full_report(results, figures=FIGURE_LINKS)
    assert "- **Decision**: none yet: no optimized candidate was measured" in text
    assert "*Candidate p50 latency figure skipped: no candidate has a measured latency" in text
    assert "- No quick win was measured in this run." not in text  # advice steps still listed
    assert "## Reproduce" in text and "planner plan --model demo:inefficient" in text


def test_only_baseline_candidate(results) -> None:
    results["candidates"] = results["candidates"][:1]
    results["best"] = 0
    text = full_report(results, figures=FIGURE_LINKS)
    assert "None of the measured candidates beat the baseline" in text
    assert "only the baseline was measured, so there is nothing to compare it with" in text


def test_failed_status_without_warnings() -> None:
    text = full_report({"status": "failed"})
    assert "**Partial report: failed — no warnings recorded**" in text
    assert "## Reproduce" in text


@pytest.mark.parametrize("results", [{}, {"status": "ok"}])
def test_an_empty_run_renders(results) -> None:
    text = full_report(results)
    assert text.startswith("# Deployment report")
    assert "not recorded" in text


@pytest.mark.parametrize(("results", "field"), [({"schema_version": 3, "candidates": ["oops"]}, "$.candidates"),
                                                ({"baseline": []}, "$.baseline"),
                                                ({"baseline": {"latency_ms": {"p50_ms": "fast"}}}, "$.baseline")])
def test_a_file_that_does_not_fit_says_which_field(results, field) -> None:
    with pytest.raises(PlannerError) as caught:
        full_report(results)
    assert field in caught.value.problem and "planner plan" in caught.value.fix


def test_planner_report_on_a_hand_broken_file_says_what_to_do(tmp_path, fixture_results, capsys) -> None:
    from planner.cli.main import main

    broken = copy.deepcopy(fixture_results)
    broken["candidates"][1]["latency_ms"]["p50_ms"] = "fast"
    (tmp_path / "results.json").write_text(json.dumps(broken))
    assert main(["report", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "$.candidates[1].latency_ms.p50_ms" in err and not (tmp_path / "report.md").exists()


def test_every_key_can_be_missing(fixture_results) -> None:
    for key in list(fixture_results):
        results = copy.deepcopy(fixture_results)
        del results[key]
        assert full_report(results, figures=FIGURE_LINKS).startswith("# Deployment report")


@pytest.mark.parametrize("part", ["baseline", "candidate"])
def test_a_missing_key_renders_or_names_itself(fixture_results, part) -> None:
    """A key the format may omit renders; one it needs is named in the error, never a traceback."""
    record = fixture_results["baseline"] if part == "baseline" else fixture_results["candidates"][1]
    rendered = 0
    for key in list(record):
        results = copy.deepcopy(fixture_results)
        for holder in [results["baseline"]] if part == "baseline" else results["candidates"]:
            holder.pop(key, None)
        try:
            assert full_report(results, figures=FIGURE_LINKS).startswith("# Deployment report")
            rendered += 1
        except PlannerError as exc:
            assert f"`{key}`" in str(exc)
    assert rendered >= len(record) // 2  # most of a record is optional: older files lack it


def test_without_figures_says_so(fixture_results) -> None:
    text = full_report(fixture_results)
    assert "*Latency distribution figure not rendered" in text
    assert "](figures/" not in text


def test_figure_not_drawn_gives_the_reason(fixture_results) -> None:
    links = {k: v for k, v in FIGURE_LINKS.items() if k != "roofline"}
    text = full_report(fixture_results, figures=links,
                           figure_notes={"roofline": "ValueError: boom"})
    assert "*Roofline with the model's layers figure not drawn: ValueError: boom.*" in text


def test_no_gpu_reason_comes_from_probe_notes(fixture_results) -> None:
    text = full_report(fixture_results, figures=FIGURE_LINKS)
    assert ("- **GPU**: no NVIDIA GPU — NVML library not found (libnvidia-ml.so.1): no NVIDIA "
            "driver in this container") in text


def test_gpu_listed(results) -> None:
    results["hardware"]["gpus"] = to_data(gpu_server(h100()))["gpus"]
    results["hardware"]["driver_version"] = "550.54.15"
    text = full_report(results, figures=FIGURE_LINKS)
    assert ("- **GPU**: NVIDIA H100 80GB HBM3 — 80 GiB memory, compute capability 9.0, 132 SMs, "
            "up to 1,980 MHz, tensor cores: Hopper (4th gen)") in text
    assert "- **NVIDIA software**: driver 550.54.15" in text


def test_unstable_and_missing_percentiles(results) -> None:
    lat = results["baseline"]["latency_ms"]
    lat.update(unstable=True, iqr_over_median=0.183, p90_ms=None, samples=40)
    text = full_report(results, figures=FIGURE_LINKS)
    assert "| p90 | not measured — needs ≥64 samples (this run: 40) |" in text
    assert "**no — unstable** (IQR/median 18.3%)" in text


def test_bottleneck_groups_shape(results) -> None:
    """The BottleneckSummary.to_dict() shape renders its counts and shares."""
    results["baseline"]["bottleneck_classes"] = {"ranked_by": "measured time", "groups": [
        {"class": "memory-bound", "layer_count": 9, "time_ms": 40.1, "time_share": 0.144,
         "top": [{"layer": "gelu#6", "type": "GELU", "time_ms": 10.47, "time_share": 0.0377,
                  "cause": "moves bytes"}]},
        {"class": "compute-bound", "layer_count": 7, "time_ms": 230.0, "time_share": 0.83, "top": []},
        {"class": "throughput-limited", "layer_count": 1, "time_ms": 0.31, "time_share": 0.0011,
         "top": []}]}
    text = full_report(results, figures=FIGURE_LINKS)
    assert "#### Memory-bound (9 layer calls, 14.4% of layer time)" in text
    assert "- `gelu#6` (GELU), 10.5 ms, 3.77% of layer time: moves bytes" in text
    assert "Each class lists its layers by measured time." in text


def test_classes_derived_from_verdicts_when_absent(results) -> None:
    del results["baseline"]["bottleneck_classes"]
    text = full_report(results, figures=FIGURE_LINKS)
    assert "derived from the layer verdicts" in text
    assert "- `classifier` (Linear), 0.31 ms, 0.11% of layer time" in text


def test_missing_figure_reasons(partial_results) -> None:
    data = ReportData(partial_results)
    assert figdata.missing_reason(data, figdata.LATENCY) is None
    del partial_results["baseline"]["ceilings"]
    assert "no ceilings were recorded" in figdata.missing_reason(ReportData(partial_results), figdata.ROOFLINE)


def test_a_partial_run_names_its_failed_candidates(results) -> None:
    results["status"] = "partial"
    results["candidates"][1] = {**results["candidates"][1], "status": "failed", "reason": "RuntimeError: shape"}
    text = full_report(results, figures=FIGURE_LINKS)
    failed = ", ".join(c["label"] for c in results["candidates"] if c["status"] == "failed")
    count = sum(c["status"] == "failed" for c in results["candidates"])
    summary = text.split("## Summary")[1].split("\n\n")[1]
    assert summary.startswith("> **Partial report — ")
    link = "[All candidates](evidence.md#all-candidates)"
    assert f"{count} candidate(s) failed: {failed} (reasons under {link})**" in summary
