"""results.json's schema versions: the upgrade of an older file to the current schema, before it is
decoded. The serialiser itself is `planner.codec`."""

from __future__ import annotations

from typing import Any

from planner.codec import SchemaError
from planner.results.values import SCHEMA_VERSION

__all__ = ["upgrade"]


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """The results object in the current schema (schema 1 kept a rank on each candidate; schema 2 named one
    plugin per plan step and decision-path action; older files listed the bottleneck classes' layers as a
    mapping of class to layers, and recorded a requirement check's verdict only as `met`)."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SchemaError(f"schema version {version!r} is newer than this planner reads ({SCHEMA_VERSION})")
    if version == 1:
        data = _from_schema_1(data)
    if version <= 2:
        data = _from_schema_2(data)
    return _with_check_statuses(_with_bottleneck_groups(data))


_MET_STATUS: dict[Any, str] = {True: "met", False: "missed"}


def _with_check_statuses(data: dict[str, Any]) -> dict[str, Any]:
    """Requirement checks that predate `status` get the one their `met` stood for (met, missed, not measured)."""
    keys = ("requirement_checks", "requirement_checks_baseline")
    if not any(isinstance(data.get(k), list) for k in keys):
        return data
    data = dict(data)
    for key in keys:
        if isinstance(data.get(key), list):
            data[key] = [{**c, "status": _MET_STATUS.get(c.get("met"), "not-measured")}
                         if isinstance(c, dict) and "status" not in c else c for c in data[key]]
    return data


def _first_text(row: dict[str, Any], *keys: str) -> str:
    """The first of these keys that holds a value, as text ('' when none does): older rows named a field
    several ways."""
    value = next((row[key] for key in keys if row.get(key) not in (None, "")), None)
    return "" if value is None else str(value)


def _class_row(row: Any) -> dict[str, Any]:
    """One layer of an older bottleneck class as a group's `top` entry; a bare value is the layer's name. A time
    that is not a number is left out, as that form's report left out what it could not read."""
    if not isinstance(row, dict):
        return {"layer": str(row)}
    entry: dict[str, Any] = {"layer": _first_text(row, "layer", "name", "key"), "type": _first_text(row, "type"),
                             "cause": _first_text(row, "cause", "reason", "explanation")}
    for key in ("time_ms", "time_share"):
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            entry[key] = value
    return entry


def _with_bottleneck_groups(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with an older baseline's bottleneck classes, a mapping of class name to its layers (`layer`, `type`,
    `time_ms`, `time_share`, `cause`), in the current form: one group per class with those layers as its `top`.

    That form counted nothing: the groups get no `layer_count` or time, and the record no `ranked_by`, which
    the current form always states (the report prints no count for such a record). The form changed without a
    schema version, so its shape tells it; `{}` (no classes, an ONNX-only model's) is already current.
    """
    baseline = data.get("baseline")
    classes = baseline.get("bottleneck_classes") if isinstance(baseline, dict) else None
    if not isinstance(baseline, dict) or not isinstance(classes, dict) or not classes \
            or "groups" in classes or "ranked_by" in classes:
        return data
    groups = [{"class": str(name), "top": [_class_row(row) for row in rows] if isinstance(rows, list) else []}
              for name, rows in classes.items()]
    return {**data, "baseline": {**baseline, "bottleneck_classes": {"groups": groups}}}


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
