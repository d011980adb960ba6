"""The method end to end: detect → load → baseline → checklist → decide → candidates → measure →
rank → report. The CLI and the TUI both drive it through events; neither re-implements a step.

The names below load on first use, so a client that needs only the step graph (`planner.pipeline.steps`,
as the TUI's engine mirror does) does not load the whole engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.pipeline.options import PlanOptions
    from planner.pipeline.outcome import PlanOutcome
    from planner.pipeline.outdir import default_out_dir, prepare_out_dir
    from planner.pipeline.run import run_plan
    from planner.pipeline.session import PlanSession, resolve_target

_WHERE = {"default_out_dir": "outdir", "prepare_out_dir": "outdir", "PlanOptions": "options", "run_plan": "run",
          "PlanOutcome": "outcome", "PlanSession": "session", "resolve_target": "session"}

__all__ = ["PlanOptions", "PlanOutcome", "PlanSession", "default_out_dir", "prepare_out_dir",
           "resolve_target", "run_plan"]


def __getattr__(name: str) -> Any:
    """Load a name of the pipeline's API from the module that owns it, on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module 'planner.pipeline' has no attribute {name!r}")
    value = getattr(import_module(f"planner.pipeline.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
