"""The method end to end: detect → load → baseline → checklist → decide → candidates → measure →
rank → report. The CLI and the TUI both drive it through events; neither re-implements a step."""

from planner.pipeline.outdir import default_out_dir, prepare_out_dir
from planner.pipeline.run import PlanOptions, run_plan
from planner.pipeline.session import PlanOutcome, PlanSession, resolve_target

__all__ = ["PlanOptions", "PlanOutcome", "PlanSession", "default_out_dir", "prepare_out_dir",
           "resolve_target", "run_plan"]
