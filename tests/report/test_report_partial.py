"""Partial, empty and oddly shaped results still render, and say what is missing and why."""

from __future__ import annotations

import copy

import pytest
from hardware_profiles import gpu_server, h100
from report_fixtures import FIGURE_LINKS

from planner.codec import to_data
from planner.report import figdata, render_markdown
from planner.report.data import ReportData


def test_interrupted_run_says_partial(partial_results) -> None:
    text = render_markdown(partial_results, figures=FIGURE_LINKS)
    assert ("**Partial report: interrupted — interrupted by Ctrl-C: the results hold what was "
            "measured**") in text
    assert "Checklist: not recorded: the run's status is interrupted" in text
    assert "No candidates: not recorded: the run's status is interrupted" in text
    # What the baseline measured is still reported in full.
    assert "| p50 | 268 ms |" in text
    assert "**Whole model: compute-bound.**" in text


def test_partial_run_figures_follow_the_data(partial_results) -> None:
    text = render_markdown(partial_results, figures=FIGURE_LINKS)
    assert "![Latency distribution](figures/latency.png)" in text
    assert "![Roofline with the model's layers](figures/roofline.png)" in text
    assert "*Candidate p50 latency figure skipped: no candidate has a measured latency" in text


def test_empty_candidate_list(results) -> None:
    results["candidates"] = []
    results["best"] = None
    results["ranking"] = []
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert "- **Decision**: none yet: no optimized candidate was measured" in text
    assert "*Candidate p50 latency figure skipped: no candidate has a measured latency" in text
    assert "- No quick win was measured in this run." not in text  # advice steps still listed
    assert "## Reproduce" in text and "planner plan --model demo:inefficient" in text


def test_only_baseline_candidate(results) -> None:
    results["candidates"] = results["candidates"][:1]
    results["best"] = 0
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert "None of the measured candidates beat the baseline" in text
    assert "only the baseline was measured, so there is nothing to compare it with" in text


def test_failed_status_without_warnings() -> None:
    text = render_markdown({"status": "failed"})
    assert "**Partial report: failed — no warnings recorded**" in text
    assert "## Reproduce" in text


@pytest.mark.parametrize("results", [{}, {"status": "ok"}, {"candidates": "oops", "baseline": []},
                                     {"baseline": {"latency_ms": {"p50_ms": "fast"}}}])
def test_nonsense_renders(results) -> None:
    text = render_markdown(results)
    assert text.startswith("# Deployment report")
    assert "not recorded" in text


def test_every_key_can_be_missing(fixture_results) -> None:
    for key in list(fixture_results):
        results = copy.deepcopy(fixture_results)
        del results[key]
        assert render_markdown(results, figures=FIGURE_LINKS).startswith("# Deployment report")


def test_every_baseline_key_can_be_missing(fixture_results) -> None:
    for key in list(fixture_results["baseline"]):
        results = copy.deepcopy(fixture_results)
        del results["baseline"][key]
        assert render_markdown(results, figures=FIGURE_LINKS).startswith("# Deployment report")


def test_every_candidate_key_can_be_missing(fixture_results) -> None:
    for key in list(fixture_results["candidates"][1]):
        results = copy.deepcopy(fixture_results)
        for cand in results["candidates"]:
            cand.pop(key, None)
        assert render_markdown(results, figures=FIGURE_LINKS).startswith("# Deployment report")


def test_without_figures_says_so(fixture_results) -> None:
    text = render_markdown(fixture_results)
    assert "*Latency distribution figure not rendered" in text
    assert "](figures/" not in text


def test_figure_not_drawn_gives_the_reason(fixture_results) -> None:
    links = {k: v for k, v in FIGURE_LINKS.items() if k != "roofline"}
    text = render_markdown(fixture_results, figures=links,
                           figure_notes={"roofline": "ValueError: boom"})
    assert "*Roofline with the model's layers figure not drawn: ValueError: boom.*" in text


def test_no_gpu_reason_comes_from_probe_notes(fixture_results) -> None:
    text = render_markdown(fixture_results, figures=FIGURE_LINKS)
    assert ("- **GPU**: no NVIDIA GPU — NVML library not found (libnvidia-ml.so.1): no NVIDIA "
            "driver in this container") in text


def test_gpu_listed(results) -> None:
    results["hardware"]["gpus"] = to_data(gpu_server(h100()))["gpus"]
    results["hardware"]["driver_version"] = "550.54.15"
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert ("- **GPU**: NVIDIA H100 80GB HBM3 — 80 GiB memory, compute capability 9.0, 132 SMs, "
            "up to 1,980 MHz, tensor cores: Hopper (4th gen)") in text
    assert "- **NVIDIA software**: driver 550.54.15" in text


def test_unstable_and_missing_percentiles(results) -> None:
    lat = results["baseline"]["latency_ms"]
    lat.update(unstable=True, iqr_over_median=0.183, p90_ms=None, samples=40)
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert "| p90 | not measured — needs ≥64 samples (this run: 40) |" in text
    assert "**no — unstable** (IQR/median 18.3%)" in text


def test_brief_style_keys(results) -> None:
    """Earlier key names for checklist, decision path and checks still render."""
    results["checklist"] = [{"text": "Is MKLDNN on?", "group": "CPU", "answer": "yes",
                             "evidence": {"enabled": True}, "status": "auto"},
                            {"id": "labels", "group": "Model", "status": "ask-user"}]
    results["decision_path"] = {"target": "cpu", "nodes": [
        {"id": "a", "text": "Is there a GPU?", "branch": "no", "evidence": "no driver", "taken": True},
        {"id": "b", "text": "Edge board?", "taken": False}], "actions": ["measure runtimes"]}
    results["requirement_checks"] = [{"name": "latency_ms", "target": 50.0, "measured": 40.0, "met": True,
                                      "text": ""}]
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert "| Is MKLDNN on? | yes | enabled yes | answered from measurements |" in text
    assert "- labels" in text
    assert "- Is there a GPU? → **no** — no driver" in text
    assert "Not reached on this path:\n\n- Edge board?" in text
    assert "- measure runtimes" in text
    assert "| latency ms | 50 ms | 40 ms | met | met with 20% headroom | — |" in text


def test_bottleneck_groups_shape(results) -> None:
    """The BottleneckSummary.to_dict() shape renders its counts and shares."""
    results["baseline"]["bottleneck_classes"] = {"ranked_by": "measured time", "groups": [
        {"class": "memory-bound", "layer_count": 9, "time_ms": 40.1, "time_share": 0.144,
         "top": [{"layer": "gelu#6", "type": "GELU", "time_ms": 10.47, "time_share": 0.0377,
                  "cause": "moves bytes"}]},
        {"class": "compute-bound", "layer_count": 7, "time_ms": 230.0, "time_share": 0.83, "top": []},
        {"class": "throughput-limited", "layer_count": 1, "time_ms": 0.31, "time_share": 0.0011,
         "top": []}]}
    text = render_markdown(results, figures=FIGURE_LINKS)
    assert "#### Memory-bound (9 layer calls, 14.4% of layer time)" in text
    assert "- `gelu#6` (GELU), 10.5 ms, 3.77% of layer time: moves bytes" in text
    assert "Each class lists its layers by measured time." in text


def test_classes_derived_from_verdicts_when_absent(results) -> None:
    del results["baseline"]["bottleneck_classes"]
    text = render_markdown(results, figures=FIGURE_LINKS)
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
    text = render_markdown(results, figures=FIGURE_LINKS)
    failed = ", ".join(c["label"] for c in results["candidates"] if c["status"] == "failed")
    count = sum(c["status"] == "failed" for c in results["candidates"])
    summary = text.split("## Summary")[1].split("\n\n")[1]
    assert summary.startswith("> **Partial report — ")
    assert f"{count} candidate(s) failed: {failed} (reasons under Appendix › All candidates)**" in summary
