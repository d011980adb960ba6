"""The plan's end-to-end request timing (`--pipeline`): with the original model at the profile step, and with
the plan's winner at the end, each in a measuring worker (planner.measure.pipeline_timing).

A pipeline that fails is a warning with its fix, recorded as a split with the error: the plan goes on, and the
checklist's bottleneck question stays open with that reason.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner import units
from planner.errors import PlannerError
from planner.events import Event, EventSink
from planner.results import CandidateResult, PipelineSplit, from_data

if TYPE_CHECKING:
    from planner.plugins import ModelRef

TIMEOUT_S = 180.0
"""The worker's cap: opening the runtime, importing the user's file and a few hundred requests."""


@dataclass(frozen=True)
class RequestTiming:
    """What the plan was asked to time end to end: the --pipeline argument and where raw samples may come from."""

    pipeline: str  # FILE.py:PRE[,POST]
    sample_dir: Path | None = None  # the user's --val-data folder: its files stand in when the file gives no samples


def time_requests(timing: RequestTiming, candidate: CandidateResult, *, model: "ModelRef", quick: bool,
                  on_event: EventSink, role: str) -> PipelineSplit:
    """The split with this candidate's runtime; a failure is announced and recorded, never raised.

    `role` names the candidate in words ('the original model', 'the winner').
    """
    from planner.measure.pipeline_timing import PipelineJob, failed_split, measure_pipeline, sample_files
    from planner.plugins import CandidateSpec

    on_event(Event("stage", f"timing your requests end to end (--pipeline {timing.pipeline}) with {role}",
                   stage="pipeline"))
    try:
        spec = from_data(candidate.spec, CandidateSpec)
        job = PipelineJob(model=model, spec=spec, pipeline=timing.pipeline, quick=quick,
                          sample_paths=sample_files(timing.sample_dir))
        split = measure_pipeline(job, label=candidate.label, timeout_s=TIMEOUT_S)
    except PlannerError as exc:
        message = f"{exc.problem} ({exc.fix})" if exc.fix else exc.problem
        on_event(Event("warning", f"no end-to-end split with {role}: {message}", stage="pipeline"))
        return failed_split(timing.pipeline, exc, label=candidate.label)
    on_event(Event("stage_done", f"requests with {role}: {split.line()}; median request "
                   f"{units.ms(split.request_p50_ms)} over {split.requests} requests", stage="pipeline"))
    return split


def with_split(candidate: CandidateResult, split: PipelineSplit) -> CandidateResult:
    """The candidate carrying its end-to-end split."""
    return dataclasses.replace(candidate, pipeline=split)
