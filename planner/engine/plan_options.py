"""`planner plan`'s options as the protocol carries them (paths as text), for `--engine subprocess` and SSH:
the codec writes and reads them, so a new option needs no change here."""

from __future__ import annotations

import dataclasses
from typing import Any

from planner.codec import from_data, to_data
from planner.pipeline.options import PlanOptions


def options_data(options: PlanOptions) -> dict[str, Any]:
    """The options as JSON-ready data: paths as text, tuples as lists."""
    return to_data(options)


def options_from_data(data: dict[str, Any]) -> PlanOptions:
    """The options back from `options_data`; an unknown option is an error that names it."""
    from planner.errors import PlannerError

    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(PlanOptions)})
    if unknown:
        raise PlannerError(f"unknown plan option(s): {', '.join(unknown)}",
                           "the client and the engine are different planner versions: reinstall one to match")
    return from_data(data, PlanOptions)
