"""Time the user's whole request (`--pipeline FILE.py:PRE[,POST]`) in a measuring worker, with one candidate's runtime.

The request is the user's preprocessing, the model call and their postprocessing (planner.measure.request_split,
which a hand-over package's run.py carries too). The worker opens the candidate as every timing does
(planner.measure.evaluate.open_timed's plugin), so the model part is the same runtime the plan measured alone.
Any failure of the user's code, or a worker that crashes or runs past its time, is a PlannerError that names
the function and says what to do; the caller keeps going without the split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planner.errors import PlannerError
from planner.plugins import CandidateSpec, ModelRef
from planner.results.pipeline_split import PipelineSplit

# Bounds on the requests timed: a quick run's and a full run's (the parts' means settle fast; this is not the
# model's own latency, which the timer measures with its confidence interval).
QUICK_REQUESTS, QUICK_SECONDS = 100, 2.0
FULL_REQUESTS, FULL_SECONDS = 400, 6.0
SAMPLE_FILES_MAX = 64
"""At most this many --val-data files stand in for a pipeline file that gives no samples."""


@dataclass(frozen=True)
class PipelineJob:
    """What the worker needs to time requests end to end: plain, picklable data."""

    model: ModelRef
    spec: CandidateSpec
    pipeline: str  # FILE.py:PRE[,POST]
    quick: bool = False
    sample_paths: tuple[str, ...] = ()  # raw samples when the file defines none (the files of --val-data)
    env: dict = field(default_factory=dict)
    call_limit_s: float | None = None  # one PRE or POST call longer than this is an error (None: the default)


def check_pipeline_arg(text: str, *, trust_code: bool) -> None:
    """Fail now, before any measuring, on a malformed argument, a missing file or code not trusted."""
    from planner.measure.request_split import PipelineError, parse_pipeline

    try:
        path, _, _ = parse_pipeline(text)
    except PipelineError as exc:
        raise PlannerError(exc.problem, exc.fix) from exc
    if not trust_code:
        raise PlannerError(f"--pipeline {path} is Python code, and running it could do anything",
                           "if you trust this file, pass --trust-code to let the planner import and run it")


def sample_files(folder: Path | None) -> tuple[str, ...]:
    """The files of a --val-data folder (labels files left out), sorted, as raw samples passed by path."""
    if folder is None or not Path(folder).is_dir():
        return ()
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.endswith("_labels.npy"))
    return tuple(str(p) for p in files[:SAMPLE_FILES_MAX])


def run_pipeline_job(job: PipelineJob) -> dict:
    """Worker side: open the candidate, time requests through the user's functions; the split or the error."""
    from planner.measure import request_split
    from planner.models.loaded import make_feeds
    from planner.plugins import get_plugin

    try:
        pipeline = request_split.load_pipeline(job.pipeline, job.sample_paths)
        session = get_plugin(job.spec.plugin).open(job.spec, job.model)
        # The feed the runtime takes, as every timing makes it: each input's shape (batch first) and dtype.
        template = {name: (array.shape, array.dtype)
                    for name, array in make_feeds(job.model.inputs, count=1, seed=1)[0].items()}

        def call_model(feed: dict):
            return session.to_numpy(session.run(session.prepare(feed)))

        split = request_split.time_requests(
            pipeline, call_model, template,
            max_requests=QUICK_REQUESTS if job.quick else FULL_REQUESTS,
            max_time_s=QUICK_SECONDS if job.quick else FULL_SECONDS,
            call_limit_s=job.call_limit_s or request_split.PIPELINE_CALL_LIMIT_S)
    except request_split.PipelineError as exc:
        return {"error": exc.problem, "fix": exc.fix}
    return {"split": split}


def measure_pipeline(job: PipelineJob, *, label: str = "", timeout_s: float = 120.0) -> PipelineSplit:
    """Parent side: the split of the user's requests with this candidate; PlannerError when it cannot be had."""
    from planner.measure import WorkerStatus, run_isolated
    from planner.measure.request_split import parse_pipeline

    _, pre, post = parse_pipeline(job.pipeline)
    names = " and ".join(n for n in (pre, post) if n)
    outcome = run_isolated(run_pipeline_job, job, timeout_s=timeout_s, env=job.env or None)
    if outcome.status is WorkerStatus.TIMEOUT:
        raise PlannerError(f"timing requests through {names} ran past {timeout_s:g} s",
                           f"check that {names} return (no endless loop, no waiting on input) and are fast "
                           "enough to run a few hundred times")
    if outcome.status is not WorkerStatus.OK:
        raise PlannerError(f"the worker timing requests through {names} stopped: {outcome.reason}",
                           f"run {names} on one of your samples in Python to find what fails")
    value = outcome.value
    if "error" in value:
        raise PlannerError(value["error"], value.get("fix", ""))
    split = value["split"]
    return PipelineSplit(pipeline=job.pipeline, runtime=label, requests=int(split["requests"]),
                         distinct_samples=int(split["distinct_samples"]), samples_from=str(split["samples_from"]),
                         preprocess_ms=split["preprocess_ms"], model_ms=split["model_ms"],
                         postprocess_ms=split["postprocess_ms"], request_p50_ms=split["request_p50_ms"])


def failed_split(pipeline: str, error: PlannerError, *, label: str = "") -> PipelineSplit:
    """The record of a pipeline that could not be timed: the error and its fix, no parts."""
    return PipelineSplit(pipeline=pipeline, runtime=label, error=error.problem, fix=error.fix)
