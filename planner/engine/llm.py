"""A decoder LLM in the engine: a causal-LM folder loads as its facts, and its plan runs in one go.

A Hugging Face causal-LM folder is not a model the step graph measures (profile, checklist, tree, candidates): the
LLM method (planner.llm.plan) times it token by token in one run. So `Load` of such a folder reads its facts from
its config and weight headers (milliseconds, nothing loaded), the session forgets the model it held as any other
load would, and `PlanLlm` runs the LLM plan with the engine's events and cancel flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from planner.codec import to_data
from planner.engine.protocol import LlmFolder, LlmPlanned, PlanLlm
from planner.events import CancelToken, EventSink

if TYPE_CHECKING:
    from planner.llm.plan import LlmOptions, LlmOutcome
    from planner.pipeline import PlanSession


class LlmPlanner(Protocol):
    """What runs an LLM plan: `planner.llm.plan.run_llm_plan`, or a recorded one in the TUI's tests."""

    def __call__(self, options: LlmOptions, *, on_event: EventSink, cancel: CancelToken | None) -> LlmOutcome:
        """Plan `options.folder` end to end; returns how it ended."""


def is_llm_source(source: str) -> bool:
    """Whether `source` names a Hugging Face model folder (one with a config.json): the LLM's to load, or to refuse
    with why (not a causal LM, no tokenizer, no weights) rather than as "not a model file"."""
    from planner.models.llm import is_model_folder

    return is_model_folder(source)


def hold_llm(session: PlanSession, source: str) -> LlmFolder:
    """Read the folder's facts (a clear ModelLoadError when it is not a usable causal-LM folder, and the session
    keeps what it had), then make the session forget its model: the LLM takes the model's place, so what was
    measured for the model before it is discarded as another model's load would discard it."""
    from planner.models.llm import read_llm_folder
    from planner.pipeline.steps import Change
    from planner.pipeline.validation_setup import ValidationSetup

    facts = read_llm_folder(source)
    session.model = None
    session.given = ValidationSetup()  # validation images and output kinds are the other models' judges
    session.out_dir = None
    session.update(model=None)
    session.invalidate(Change.MODEL)
    return LlmFolder(source=source, facts=to_data(facts))


def plan_llm(folder: LlmFolder, command: PlanLlm, *, on_event: EventSink, cancel: CancelToken,
             planner: LlmPlanner | None = None) -> tuple[LlmFolder, LlmPlanned]:
    """Run the LLM plan on the held folder with the command's settings; returns the folder with where its plan went,
    and the answer. A PlannerError (settings the model cannot take, a folder that cannot be written) fails it."""
    from planner.llm.plan import LlmOptions
    from planner.pipeline.outdir import free_dir

    if planner is None:
        from planner.llm.plan import run_llm_plan

        planner = run_llm_plan
    # A folder named by the client that already holds a plan is not written over: the new plan goes beside it.
    out = free_dir(Path(command.out)) if command.out else None
    options = LlmOptions(folder=Path(folder.source), out=out, quick=command.quick, budget_s=command.budget_s,
                         prompt_lengths=tuple(command.prompt_lengths), new_tokens=command.new_tokens,
                         plugins=tuple(command.plugins or ()), gguf=Path(command.gguf) if command.gguf else None)
    outcome = planner(options, on_event=on_event, cancel=cancel)
    plan = outcome.plan
    status = plan.status if plan is not None else ("interrupted" if outcome.interrupted else "failed")
    out_dir = str(outcome.out_dir) if outcome.out_dir is not None else ""
    report = str(outcome.report_path) if outcome.report_path is not None else None
    held = LlmFolder(source=folder.source, facts=folder.facts, kind=folder.kind, plan_dir=out_dir or None,
                     report_path=report, status=status)
    return held, LlmPlanned(out_dir=out_dir, report_path=report, status=status,
                            plan=to_data(plan) if plan is not None else {})
