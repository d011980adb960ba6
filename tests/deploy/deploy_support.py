"""Helpers for the hand-over package tests: candidate results with stated figures, and plan results ranking them."""

from __future__ import annotations

ORT_CONFIG = {"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
              "intra_op_threads": 1, "inter_op_threads": 1, "allow_spinning": True}


def stated_result(spec, *, p50_ms: float, phase: int = 1):
    """A candidate result for `spec` with a stated p50 and exact fidelity, for tests that do not time anything."""
    from planner.results import CandidateResult, Declared, Status, to_data
    from planner.results.values import Fidelity, LatencyStats

    stats = LatencyStats(samples=100, mean_ms=p50_ms, std_ms=0.0, min_ms=p50_ms, max_ms=p50_ms, p50_ms=p50_ms,
                         p90_ms=p50_ms, p95_ms=p50_ms, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False,
                         ci95_rel=0.01)
    return CandidateResult(plugin=spec.plugin, label=spec.label, config=spec.config, precision=str(spec.precision),
                           status=Status.OK, latency_ms=stats, spec=to_data(spec),
                           fidelity=Fidelity(cosine=1.0, max_abs_error=0.0, mean_abs_error=0.0, top1_agreement=1.0,
                                             samples=4),
                           declared=Declared(phase=phase, runtime="test"))


def ranked(*candidates):
    """Plan results holding `candidates`, ranked in the order given, on this machine."""
    from planner.hardware import detect
    from planner.results import PlanResults, Ranking

    return PlanResults(candidates=tuple(candidates), ranking=Ranking(order=tuple(range(len(candidates)))),
                       hardware=detect())
