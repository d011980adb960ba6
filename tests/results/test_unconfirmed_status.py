"""A candidate not established on real data: it round-trips through results.json, counts as measured, is never
ranked, and is named as the lead to check when it beats the best confirmed candidate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from planner.measure.stats import compute_stats
from planner.results import CandidateResult, PlanResults, Status, rank_candidates, read_results, write_results
from planner.results.view import check_on_your_data, unconfirmed_lead


def _candidate(label: str, p50: float, status: Status, speedup: float) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="int8", status=status,
                           latency_ms=compute_stats([p50] * 20), speedup=speedup)


CANDIDATES = (_candidate("openvino fp32", 6.1, Status.OK, 1.64), _candidate("int8 nncf", 2.6, Status.UNCONFIRMED, 3.9),
              _candidate("bf16", 3.4, Status.UNCONFIRMED, 2.9), _candidate("ort int8", 3.0, Status.REJECTED, 3.3))


def test_an_unconfirmed_candidate_round_trips_and_is_not_ranked(tmp_path: Path) -> None:
    ranking = rank_candidates(CANDIDATES)
    assert ranking.order == (0,)
    results = PlanResults(candidates=CANDIDATES, ranking=ranking)
    write_results(tmp_path / "results.json", results)
    again = read_results(tmp_path / "results.json")
    assert again.candidates[1].status is Status.UNCONFIRMED and again.candidates[1].measured
    assert again == dataclasses.replace(results, schema_version=again.schema_version)


def test_the_lead_is_the_fastest_unconfirmed_candidate_faster_than_the_best_confirmed() -> None:
    data = CANDIDATES
    lead = unconfirmed_lead(data, 1.64)
    assert lead is not None and lead.label == "int8 nncf"  # the rejected one never counts, however fast
    assert check_on_your_data(lead) == "Up to 3.9x (int8 nncf) if it holds on your data: re-run with --val-data DIR"
    assert unconfirmed_lead(data, 4.0) is None
    assert unconfirmed_lead(data[:1], None) is None
    # With nothing confirmed, the baseline's own speed is the bar.
    assert unconfirmed_lead(data, None) is lead
