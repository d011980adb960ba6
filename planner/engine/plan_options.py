"""`planner plan`'s options as the protocol carries them (paths as text), for `--engine subprocess`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from planner.pipeline.run import PlanOptions

_PATHS = ("out", "requirements_file", "val_data")


def options_data(options: PlanOptions) -> dict[str, Any]:
    """The options as JSON-ready data: paths as text, tuples as lists."""
    data = dataclasses.asdict(options)
    for name in _PATHS:
        if data[name] is not None:
            data[name] = str(data[name])
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


def options_from_data(data: dict[str, Any]) -> PlanOptions:
    """The options back from `options_data`; an unknown option is an error that names it."""
    from planner.errors import PlannerError

    known = {f.name for f in dataclasses.fields(PlanOptions)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise PlannerError(f"unknown plan option(s): {', '.join(unknown)}",
                           "the client and the engine are different planner versions: reinstall one to match")
    values = dict(data)
    for name in _PATHS:
        if values.get(name) is not None:
            values[name] = Path(values[name])
    for name in ("inputs", "plugins", "output_kinds"):
        if name in values and values[name] is not None:
            values[name] = tuple(values[name])
    return PlanOptions(**values)
