"""The one serialiser of results: typed values to JSON-ready data and back (msgspec), and the
upgrade of older results.json files to the current schema."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from planner.results.values import SCHEMA_VERSION

T = TypeVar("T")


class SchemaError(ValueError):
    """A results object that does not match the schema (a field missing or of the wrong type)."""


def to_data(value: Any) -> Any:
    """JSON-ready builtins (dicts, lists, str, numbers) from typed values; enums become strings."""
    return msgspec.to_builtins(value, builtin_types=None, str_keys=True)


def from_data(data: Any, kind: type[T]) -> T:
    """A typed value from JSON-ready data; unknown keys are ignored, wrong types raise SchemaError."""
    try:
        return msgspec.convert(data, type=kind, strict=False)
    except msgspec.ValidationError as exc:
        raise SchemaError(str(exc)) from exc


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
