"""The whole method in one call, for `planner plan`: options in, results.json and report out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from planner.events import CancelToken, EventSink, null_sink
from planner.pipeline.budget import Budget
from planner.pipeline.options import PlanOptions
from planner.pipeline.outcome import PlanOutcome
from planner.pipeline.session import PlanSession
from planner.plugins.options import PluginOptions

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel
    from planner.models.samples import SampleOptions


def run_plan(options: PlanOptions, *, on_event: EventSink = null_sink, cancel: CancelToken | None = None,
             session_factory: Callable[..., PlanSession] = PlanSession) -> PlanOutcome:
    """Run the whole method; Ctrl-C or cancel stops cleanly and keeps what was measured.

    `session_factory(on_event=..., cancel=...)` makes the plan's session (the engine keeps it, to answer
    for it afterwards; tests pass one that replays a recorded run).
    """
    from planner.pipeline.edge_projection import edge_projection, resolve_device

    # An unknown name fails now, before any measuring; a named board also sets the default requirements.
    named = resolve_device(options.device, "", None) if options.device else None
    budget = Budget.for_plan(options.budget_s, quick=options.quick)  # one too small for the baseline fails here
    session = session_factory(on_event=on_event, cancel=cancel)
    session.budget = budget
    if options.pipeline:
        from planner.measure.pipeline_timing import check_pipeline_arg
        from planner.pipeline.request_timing import RequestTiming

        check_pipeline_arg(options.pipeline, trust_code=options.trust_code)  # before any measuring
        session.request_timing = RequestTiming(options.pipeline, options.val_data)
    # A missing --val-data folder, or a kind for an output the model lacks, fails now, before any measuring.
    load_with_options(session, options)
    session.detect()
    session.set_target(options.target)
    session.set_out_dir(options.out)
    session.set_requirements(toml_path=options.requirements_file, overrides=options.requirement_overrides,
                             device_class=named.board_kinds[0] if named is not None and named.board_kinds else None)
    try:
        session.measure_ceilings(quick=options.quick)
        session.profile(quick=options.quick, timeout_s=options.timeout_s * 2)  # on the data loaded with the model
        session.decide()
        plugin_options = PluginOptions(  # the session adds the --output-kind the model was loaded with
            device=options.device or None,
            finetune_steps=_finetune_steps(options.finetune_steps, session.val_data)
            if options.finetune_steps is not None else None)
        session.optimize(plugins=options.plugins or None, timeout_s=options.timeout_s, plugin_options=plugin_options,
                         confirm=options.confirm)
        if not session.cancel.cancelled:
            session.time_winner_requests()  # with --pipeline: how much of the request is left to the model
        hw = session.detect()
        profile = resolve_device(options.device, str(hw.device_class), hw.board)
        if profile is not None and (options.device or session.target == "edge"):
            session.update(edge_device=edge_projection(session.results, profile, detected=not options.device))
        if options.no_deploy:
            session.skip_deploy("the plan ran with --no-deploy, which writes no package")
        else:
            session.deploy()  # the hand-over packages (deploy/): after ranking, before the report; never raises
    except KeyboardInterrupt:
        session.warn("interrupted by Ctrl-C: the results hold what was measured")
        session.finish(status="interrupted", write_report=options.write_report)
        raise
    except Exception as exc:  # noqa: BLE001 - keep what was measured, then surface the error
        session.warn(f"plan stopped: {type(exc).__name__}: {exc}")
        session.finish(status="failed", write_report=options.write_report)
        raise
    return session.finish(write_report=options.write_report)


def load_with_options(session: PlanSession, options: PlanOptions) -> "LoadedModel":
    """Load `options.model` with its inputs, validation data and output kind (the model's options and `val_data`,
    `val_preset`, `val_transform`, `val_sample_rate`, `output_kinds`): how `planner plan` and the engine's `load`
    command (the TUI's Model step) both load a model."""
    return session.load(options.model, input_shape=options.input_shape, inputs=list(options.inputs) or None,
                        trust_code=options.trust_code, val_data=options.val_data, samples=sample_options(options),
                        output_kinds=options.output_kinds)


def sample_options(options: PlanOptions) -> "SampleOptions":
    """How a --val-data folder of images or clips becomes inputs."""
    from planner.models.samples import SampleOptions

    return SampleOptions(preset=options.val_preset, transform=options.val_transform,
                         sample_rate=options.val_sample_rate, trust_code=options.trust_code)


def _finetune_steps(steps: int, val_data: Path | None) -> int:
    """The step count, once it is known there are labels to fine-tune on; a clear error otherwise."""
    from planner.errors import PlannerError
    from planner.models.valdata import labels_of

    if steps < 1:
        raise PlannerError(f"--finetune-steps must be at least 1, got {steps}", "pass a positive number of steps")
    if labels_of(val_data) is None:
        raise PlannerError("--finetune-steps needs labelled data to train on, and this plan has none",
                           "pass --val-data with labels (images in one sub-folder per class, or "
                           "NAME_labels.npy beside each batch), or plan demo:digits (which "
                           "ships its own labelled data)")
    return steps
