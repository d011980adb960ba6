"""results.json's schema: the upgrade of older files to the current schema. The serialiser itself is
`planner.codec` (re-exported here for the results package's readers)."""

from __future__ import annotations

from typing import Any

from planner.codec import SchemaError, from_data, to_data
from planner.results.values import SCHEMA_VERSION

__all__ = ["SchemaError", "from_data", "to_data", "upgrade"]


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """The results object in the current schema (schema 1 kept a rank on each candidate)."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SchemaError(f"schema version {version!r} is newer than this planner reads ({SCHEMA_VERSION})")
    if version == 1:
        data = _from_schema_1(data)
    return data


def _from_schema_1(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    candidates = [dict(c) for c in data.get("candidates") or [] if isinstance(c, dict)]
    ranked = sorted((c["rank"], i) for i, c in enumerate(candidates) if isinstance(c.get("rank"), int))
    for c in candidates:
        c.pop("rank", None)
        for key in ("latency_ms", "fidelity"):
            if c.get(key) == {}:  # schema 1 wrote an empty object where nothing was measured
                c[key] = None
    data["candidates"] = candidates
    if "ranking" in data or ranked:
        data["ranking"] = {"order": [i for _, i in ranked], "by": data.get("ranked_by") or "p50 latency"}
    for key in ("ranked_by", "best"):
        data.pop(key, None)
    checks = data.get("requirement_checks")
    if isinstance(checks, dict):
        # Early schema-1 files grouped the checks by subject: {"best": {...}, "baseline": {...}}.
        best, base = checks.get("best") or {}, checks.get("baseline") or {}
        data["requirement_checks"] = best.get("checks") or []
        data["requirement_checks_subject"] = best.get("label") or ""
        data["requirement_checks_baseline"] = base.get("checks") or []
    data["schema_version"] = SCHEMA_VERSION
    return data
