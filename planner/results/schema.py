"""results.json's schema versions: the upgrade of an older file to the current schema, before it is
decoded. The serialiser itself is `planner.codec`."""

from __future__ import annotations

from typing import Any

from planner.codec import SchemaError
from planner.results.values import SCHEMA_VERSION

__all__ = ["upgrade"]


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """The results object in the current schema (schema 1 kept a rank on each candidate; schema 2 named one
    plugin per plan step and decision-path action)."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SchemaError(f"schema version {version!r} is newer than this planner reads ({SCHEMA_VERSION})")
    if version == 1:
        data = _from_schema_1(data)
    if version <= 2:
        data = _from_schema_2(data)
    return data


def _plugins_listed(rows: Any) -> Any:
    """Rows with schema 2's one `plugin` (or None) as a `plugins` list."""
    if not isinstance(rows, list):
        return rows
    out = []
    for row in rows:
        if isinstance(row, dict) and "plugin" in row and "plugins" not in row:
            row = {**{k: v for k, v in row.items() if k != "plugin"},
                   "plugins": [row["plugin"]] if row["plugin"] else []}
        out.append(row)
    return out


def _with_path_plugins(holder: dict[str, Any]) -> dict[str, Any]:
    """A copy of `holder` whose decision path's actions list their plugins."""
    holder = dict(holder)
    if isinstance(holder.get("decision_path"), dict):
        holder["decision_path"] = {**holder["decision_path"],
                                   "actions": _plugins_listed(holder["decision_path"].get("actions"))}
    return holder


# How files before schema 3 spelled a candidate's thread counts, in its runtime's config or in the threads
# the worker recorded (ONNX Runtime's `intra_op_num_threads` in the oldest); schema 3 declares them in
# the spec (`threads`, `interop_threads`) for every plugin.
_LEGACY_THREADS = {
    "threads": (("config", "intra_op_threads"), ("config", "intra_op_num_threads"), ("config", "threads"),
                ("threads", "intra_op_num_threads")),
    "interop_threads": (("config", "inter_op_threads"), ("config", "inter_op_num_threads"),
                        ("config", "interop_threads"), ("threads", "inter_op_num_threads")),
}


def _with_spec_threads(cand: Any) -> Any:
    """A schema-2 candidate whose spec holds its thread counts, found where its runtime spelled them."""
    if not isinstance(cand, dict):
        return cand
    spec = dict(cand["spec"]) if isinstance(cand.get("spec"), dict) else {}
    for field, places in _LEGACY_THREADS.items():
        if spec.get(field) is not None:
            continue
        for part, name in places:
            holder = cand.get(part)
            value = holder.get(name) if isinstance(holder, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                spec[field] = value
                break
    return {**cand, "spec": spec} if spec else cand


def _from_schema_2(data: dict[str, Any]) -> dict[str, Any]:
    data = _with_path_plugins(data)
    if isinstance(data.get("candidates"), list):
        data["candidates"] = [_with_spec_threads(c) for c in data["candidates"]]
    if isinstance(data.get("plan"), dict):
        plan = _with_path_plugins(data["plan"])
        plan["steps"] = _plugins_listed(plan.get("steps"))
        data["plan"] = plan
    data["schema_version"] = SCHEMA_VERSION
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
