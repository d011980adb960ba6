"""The CLI says when a measurement was taken under interference, and whether the plan's numbers should reproduce."""

from __future__ import annotations

from planner.cli.output import environment_line, format_baseline, format_ranking
from planner.codec import from_data
from planner.measure.stats import compute_stats
from planner.results import Baseline, CandidateResult, PlanResults, Status, rank_candidates, to_data
from planner.results.audit import MeasurementAudit, judged


def _audit(load: float) -> MeasurementAudit:
    return judged(MeasurementAudit(window_s=2.0, load_samples=9, other_load_mean_cores=load,
                                   other_load_peak_cores=load, cpus_watched=2, threads_used=2, usable_cores=2))


def _cand(label: str, p50: float, audit: MeasurementAudit | None) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=compute_stats([p50 * 0.999, p50, p50 * 1.001] * 10), audit=audit)


def test_a_disturbed_plan_gets_a_flag_under_the_table() -> None:
    cands = (_cand("baseline", 10.0, _audit(0.0)), _cand("ort 2t", 5.0, _audit(0.8)))
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands)))
    flags = [line for line in text.splitlines() if line.startswith("! ")]
    assert flags == ["! Measured under interference (1 of 2): other processes used 80% of a core on average "
                     "while this was timed: re-run on an idle machine (stop other jobs, or pin them to other cores)"]
    assert "Reproducibility: 1 of 2 measurements were taken under interference" in text


def test_an_idle_plan_has_no_flag_and_says_it_should_reproduce() -> None:
    cands = (_cand("baseline", 10.0, _audit(0.02)), _cand("ort 2t", 5.0, _audit(0.05)))
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands)))
    assert not any(line.startswith("! ") for line in text.splitlines())
    assert "Reproducibility: all 2 measurements were taken with no interference seen" in text


def test_profile_output_has_an_environment_line() -> None:
    lat = to_data(compute_stats([2.0] * 20))
    base = from_data({"model": {"name": "m", "source": "demo:tiny", "kind": "demo", "parameters": 10,
                                "size_bytes": 40}, "input_shape": [1, 4], "latency_ms": lat}, Baseline)
    assert "Environment  not audited (results from an older planner)" in format_baseline(base)
    busy = format_baseline(from_data({**to_data(base), "audit": to_data(_audit(1.3))}, Baseline))
    assert "Environment  TAKEN UNDER INTERFERENCE: other processes used 1.3 cores on average" in busy


def test_bench_environment_line_when_nothing_was_seen() -> None:
    assert environment_line(_audit(0.04)) == ("no interference seen (other processes used 4% of a core on "
                                              "average, peak 4% of a core, over 2 s)")


def test_profile_output_says_why_the_batch_sweep_stopped() -> None:
    lat = to_data(compute_stats([2.0] * 20))
    why = "stopped before batch 64: about 30 GiB estimated, more than the 21 GiB available; nothing was allocated"
    base = from_data({"model": {"name": "m", "source": "demo:tiny", "kind": "demo", "parameters": 10,
                                "size_bytes": 40}, "input_shape": [1, 4], "latency_ms": lat,
                      "throughput": [{"batch": 1, "latency_p50_ms": 2.0, "samples_per_s": 500.0,
                                      "peak_memory_bytes": None}],
                      "info": {"sweep_stopped": why}}, Baseline)
    assert f"batch sweep stopped: {why}" in format_baseline(base)
