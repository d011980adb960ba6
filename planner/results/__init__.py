"""Typed results on the bus: statuses, candidate results, ranking; the one reader of results.json."""

from planner.results.values import SCHEMA_VERSION, CandidateResult, Status

__all__ = ["SCHEMA_VERSION", "CandidateResult", "Status"]
