"""The one reader of results.json (report, TUI and advice all read through it), and its writer."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from planner.codec import SchemaError, from_data, to_data
from planner.errors import PlannerError
from planner.io import write_json_atomic
from planner.results.schema import upgrade
from planner.results.values import PlanResults

RESULTS_NAME = "results.json"

RECORDS = ("environment", "model", "hardware", "requirements", "ceilings", "decision_path", "plan", "edge_device",
           "budget")
"""PlanResults' fields that hold one typed record, or None before it is made. results.json has always
written such a field as an object, `{}` when there was nothing yet, and keeps doing so: its readers
(the report, scripts) test it as an object."""


def results_data(results: PlanResults) -> dict[str, Any]:
    """The results.json object for typed results: `to_data`, with a record not made yet written `{}`."""
    data = to_data(results)
    # Rebuilt in field order: a record missing from `data` (results read from a file older than the
    # record, which msgspec leaves unset) goes where results.json has always had it, not at the end.
    return {f.name: {} if f.name in RECORDS and data.get(f.name) is None else data[f.name]
            for f in fields(PlanResults) if f.name in data or f.name in RECORDS}


def results_from_data(data: Any) -> PlanResults:
    """Typed results from a parsed results.json object (any schema this planner knows)."""
    if not isinstance(data, dict):
        raise SchemaError("the top level is not a JSON object")
    return from_data(_typed_form(upgrade(data)), PlanResults)


def _typed_form(data: dict[str, Any]) -> dict[str, Any]:
    """An upgraded results object as the typed results decode it: `{}` for a record not made yet is None,
    and an older file's model, which recorded one `input` object, lists it as its `inputs`."""
    data = dict(data)
    for key in RECORDS:
        if data.get(key) == {}:
            data[key] = None
    model = data.get("model")
    if isinstance(model, dict) and "inputs" not in model and isinstance(model.get("input"), dict):
        data["model"] = {**model, "inputs": [model["input"]]}
    return data


def read_results(path: Path) -> PlanResults:
    """Read and check a results.json file; PlannerError says what is wrong and what to do."""
    path = Path(path)
    data = _parse(path)
    try:
        return results_from_data(data)
    except SchemaError as exc:
        raise PlannerError(f"{path} is not a planner results file: {exc}",
                           "pass the results.json written by `planner plan`") from exc


def _parse(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise PlannerError(f"no such file: {path}", "pass the results.json a plan wrote") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PlannerError(f"cannot read {path}: {exc}", "check the file's permissions") from exc
    except json.JSONDecodeError as exc:
        raise PlannerError(f"{path} is not valid JSON ({exc})",
                           "re-run `planner plan`, or restore the file from its backup") from exc


def write_results(path: Path, results: PlanResults) -> None:
    """Write results.json atomically."""
    write_json_atomic(Path(path), results_data(results))
