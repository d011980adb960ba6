"""results.json: one codec round-trips the typed results, schema-1 files still read, ranking is pure."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from planner.errors import PlannerError
from planner.measure.stats import compute_stats
from planner.results import (
    SCHEMA_VERSION,
    CandidateResult,
    PlanResults,
    Ranking,
    RunStatus,
    Status,
    rank_candidates,
    read_results,
    results_from_data,
    to_data,
    write_results,
)
from planner.results.rows import candidate_rows
from planner.results.values import ThroughputPoint

# A results.json written by the schema-1 planner (ranks stored on the candidates), kept as recorded.
EXAMPLE = Path(__file__).resolve().parents[1] / "report" / "fixtures" / "results.json"


def _candidate(label: str, p50: float, *, status: Status = Status.OK, rate: float = 10.0) -> CandidateResult:
    stats = compute_stats([p50 * 0.99, p50, p50 * 1.01] * 5)
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=status,
                           latency_ms=stats, throughput=(ThroughputPoint(1, p50, rate, None),))


def test_schema_1_example_reads_with_its_ranking() -> None:
    raw = json.loads(EXAMPLE.read_text())
    assert raw["schema_version"] == 1
    results = read_results(EXAMPLE)
    assert results.schema_version == SCHEMA_VERSION and results.status is RunStatus.OK
    ranked_labels = [results.candidates[i].label for i in results.ranking.order]
    assert ranked_labels == raw["ranking"]
    assert results.best is not None and results.best.label == raw["candidates"][raw["best"]]["label"]
    assert results.candidates[0].is_reference and results.baseline is not None
    assert results.baseline.latency_ms.p50_ms == raw["baseline"]["latency_ms"]["p50_ms"]


def test_round_trip_through_results_json(tmp_path: Path) -> None:
    results = read_results(EXAMPLE)
    write_results(tmp_path / "results.json", results)
    again = read_results(tmp_path / "results.json")
    assert again == results
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION and "rank" not in data["candidates"][1]
    assert data["ranking"]["order"][0] == results.ranking.best


def test_newer_schema_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(PlannerError, match="newer than this planner reads") as err:
        read_results(path)
    assert "planner plan" in err.value.fix


def test_mistyped_file_is_a_clear_error(tmp_path: Path) -> None:
    data = {"schema_version": SCHEMA_VERSION, "candidates": [{"label": "x", "status": "fast"}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlannerError, match="not a planner results file"):
        read_results(path)


def test_ranking_is_a_new_value_and_leaves_candidates_alone() -> None:
    cands = (_candidate("slow", 9.0), _candidate("fast", 3.0),
             _candidate("rejected", 1.0, status=Status.REJECTED), _candidate("mid", 5.0, rate=50.0))
    before = tuple(dataclasses.replace(c) for c in cands)
    ranking = rank_candidates(cands, {"latency_ms": 10})
    assert ranking == Ranking(order=(1, 3, 0), by="p50 latency")
    assert cands == before
    by_rate = rank_candidates(cands, {"min_throughput": 20})
    assert by_rate.by.startswith("best throughput") and by_rate.best == 3


def test_plan_results_rank_views() -> None:
    cands = (_candidate("base", 9.0), _candidate("fast", 3.0), _candidate("failed", 0.0, status=Status.FAILED))
    results = PlanResults(candidates=cands, ranking=rank_candidates(cands))
    assert results.best is cands[1]
    rows = candidate_rows(results)
    assert [(row.rank, row.cand.label) for row in rows] == [(1, "fast"), (2, "base"), (None, "failed")]
    # No speedup recorded: each row's is the baseline's (the first candidate's) p50 over its own, worked out once.
    assert [row.speedup for row in rows] == [3.0, 1.0, None] and [row.index for row in rows] == [1, 0, 2]
    assert results_from_data(to_data(results)) == results


def test_early_schema_1_checks_grouped_by_subject_are_upgraded() -> None:
    check = {"name": "latency", "target": "< 50 ms p95", "measured": "40 ms", "met": True, "status": "met",
             "margin": "", "source": "default"}
    data = {"schema_version": 1, "candidates": [],
            "requirement_checks": {"best": {"label": "ort", "met": True, "checks": [check]},
                                   "baseline": {"label": "torch", "met": False, "checks": []}}}
    results = results_from_data(data)
    assert to_data(results.requirement_checks) == [check] and results.requirement_checks_subject == "ort"
    assert results.requirement_checks_baseline == ()


def test_a_latency_target_ranks_by_its_own_percentile_when_every_candidate_has_it() -> None:
    from planner.results.ranking import rank_candidates
    from planner.results.values import CandidateResult, LatencyStats, Status

    def cand(p50: float, p95: float | None) -> CandidateResult:
        lat = LatencyStats(samples=200, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                           p95_ms=p95, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.01)
        return CandidateResult(plugin="x", label=f"{p50}", config={}, precision="fp32", status=Status.OK,
                               latency_ms=lat)

    steady, spiky = cand(10.0, 11.0), cand(9.0, 30.0)
    target = {"latency_ms": 20, "latency_percentile": "p95", "sources": {"latency_ms": "flag"}}
    ranking = rank_candidates([steady, spiky], target)
    assert ranking.order == (0, 1) and ranking.by.startswith("p95 latency")
    partial = rank_candidates([steady, cand(9.0, None)], target)
    assert partial.order == (1, 0) and "was not measured for every candidate" in partial.by
    assert rank_candidates([steady, spiky], {}).order == (1, 0)
    default = {"latency_ms": 50, "latency_percentile": "p95", "sources": {"latency_ms": "default for Server"}}
    assert rank_candidates([steady, spiky], default).order == (1, 0)  # a default target keeps p50


def test_a_path_comes_back_from_its_text_and_anything_else_is_a_schema_error() -> None:
    from pathlib import Path

    import pytest

    from planner.codec import SchemaError, from_data, to_data
    from planner.pipeline.run import PlanOptions

    options = PlanOptions(model="demo:tiny", out=Path("/tmp/plan"), val_data=Path("data"))
    assert from_data(to_data(options), PlanOptions) == options
    with pytest.raises(SchemaError, match=r"expected text for a path, got int - at `\$.out`"):
        from_data({"model": "demo:tiny", "out": 5}, PlanOptions)
