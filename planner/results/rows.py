"""One candidate as every table shows it: the CLI's ranking, the TUI's Results step and the report's candidate
table read the same row, so a rank or a speedup is worked out once and each medium only formats it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from planner.results.values import CandidateResult, PlanResults


@dataclass(frozen=True)
class CandidateRow:
    """One candidate's row: the candidate as measured, where it sits in the results, its rank (None: not ranked),
    its speedup over the baseline and its verdict against the requirements the user set ('' when none was set)."""

    cand: CandidateResult
    index: int = 0
    rank: int | None = None
    speedup: float | None = None
    verdict: str = ""


def baseline_p50(results: PlanResults) -> float | None:
    """The baseline's median latency in ms: the profile's, else the reference candidate's, else the first one's."""
    if results.baseline is not None:
        return results.baseline.latency_ms.p50_ms
    reference = next((c for c in results.candidates if c.is_reference), None)
    reference = reference or (results.candidates[0] if results.candidates else None)
    return reference.p50 if reference is not None else None


def speedup_of(results: PlanResults, cand: CandidateResult) -> float | None:
    """The candidate's recorded speedup, else the baseline's p50 over its p50 (files that recorded none); None
    against a baseline whose own timing is invalid, unless the baseline was timed again beside this candidate (a
    confirmed leader's side-by-side ratio does not read the profile's figure)."""
    side_by_side = cand.confirmation is not None and cand.confirmation.baseline_p50_ms is not None
    if results.baseline is not None and results.baseline.invalid and not side_by_side:
        return None
    if cand.speedup is not None:
        return cand.speedup
    base, mine = baseline_p50(results), cand.p50
    return base / mine if base is not None and mine else None


def candidate_rows(results: PlanResults, verdicts: Sequence[str] = ()) -> list[CandidateRow]:
    """Every candidate's row: the ranked ones best first, then the rest as they were measured. `verdicts`, when
    given, holds each candidate's verdict by its index in the results."""
    order = list(results.ranking.order) if results.ranking is not None else []
    indices = order + [i for i in range(len(results.candidates)) if i not in order]
    return [CandidateRow(results.candidates[i], i, results.rank_of(i), speedup_of(results, results.candidates[i]),
                         verdicts[i] if i < len(verdicts) else "") for i in indices]
