"""Measure one candidate (or the baseline) in an isolated worker, the same way for everything.

The worker rebuilds the runtime from the CandidateSpec, times it with `planner.measure`,
sweeps batch sizes, records peak memory and thread settings, and returns the outputs on a
fixed set of inputs so the parent can compare them with the original model's.
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.errors import runtime_error_line
from planner.measure.energy import EnergyWindow, device_of, per_inference
from planner.measure.pool import POOL_SIZE
from planner.models.footprint import Footprint, estimate_footprint, sweep_guard
from planner.models.loaded import Feed, make_feeds
from planner.models.spec import ModelInputs
from planner.plugins import CandidateSpec, ModelRef
from planner.results import CandidateResult, SequencePoint, Status, to_data
from planner.results.energy_values import EnergySource

FIDELITY_SEED = 1000
FIDELITY_BATCHES = 16
QUICK_FIDELITY_BATCHES = 8

QUICK_SWEEP_S = 8.0
"""How long a quick run's batch sweep may take. Each batch is timed for its warm-up and minimum samples, so
a slow model's larger batches take long: demo:inefficient's batches 1, 2 and 4 took 16 s of a 27 s baseline on
a 2-core AMD EPYC (a 216 ms call). A batch that would end past this is not started, and the sweep says so."""


def fidelity_batch_count(quick: bool) -> int:
    """How many input batches outputs are compared on (baseline and candidates must agree)."""
    return QUICK_FIDELITY_BATCHES if quick else FIDELITY_BATCHES


@dataclass(frozen=True)
class MeasureJob:
    """Everything a worker needs to measure one candidate: plain, picklable data."""

    model: ModelRef
    spec: CandidateSpec
    quick: bool = False
    sweep_max_batch: int = 0  # 0: no batch sweep
    memory_budget_bytes: int | None = None
    env: dict = field(default_factory=dict)
    fidelity_batches: int = FIDELITY_BATCHES
    val_data: str | None = None
    sequence_sweep: bool = False  # also time shorter sequence lengths (a text model's baseline)
    footprint: Footprint | None = None  # the loaded model's memory estimate; None: from its inputs alone
    weights_bytes: int | None = None  # the model's weights, for the audit's last-level-cache check
    # Rows/s with several requests in flight at the best batch (planner.measure.streams); None: with
    # the batch sweep, so a quick run skips it unless its caller asks (a stated minimum throughput).
    streams: bool | None = None
    # The budgeted search's bound (ms): timing stops once this candidate is clearly slower (planner.measure.timer).
    drop_above_ms: float | None = None
    # The plan's energy counter and idle power: the latency timing is metered with it (None: no energy figure).
    energy: EnergySource | None = None
    # The plan's folder: its reproduce line names the artifacts inside it relative to it (None: as they are).
    plan_dir: str | None = None

    @property
    def measures_streams(self) -> bool:
        """Whether this job measures parallel streams."""
        return self.sweep_max_batch > 1 if self.streams is None else self.streams


def fidelity_inputs(inputs: ModelInputs, *, count: int = FIDELITY_BATCHES) -> list[Feed]:
    """The fixed inputs every candidate and the reference are compared on."""
    return make_feeds(inputs, count=count, seed=FIDELITY_SEED)


def sequence_lengths(length: int) -> list[int]:
    """The sequence lengths a sequence sweep times: powers of two from 16 below `length`, then it."""
    lengths = []
    n = 16
    while n < length:
        lengths.append(n)
        n *= 2
    return [*lengths, length] if lengths else []


def run_job(job: MeasureJob) -> dict:
    """Worker side: open the candidate, time it, sweep batches, return numbers and outputs."""
    from planner.measure import (
        MeasureSettings,
        peak_rss_bytes,
        thread_settings,
        throughput_sweep,
        time_callable,
    )
    from planner.measure.memory import (
        cuda_peak_bytes,
        current_rss_bytes,
        reset_cuda_peak,
    )
    from planner.plugins import get_plugin

    settings = MeasureSettings.quick() if job.quick else MeasureSettings.default()
    if job.drop_above_ms is not None:
        settings = dataclasses.replace(settings, drop_above_ms=job.drop_above_ms)
    plugin = get_plugin(job.spec.plugin)
    rss_before = current_rss_bytes()
    reset_cuda_peak()
    session, timer, pool = open_timed(job, plugin)
    inputs = job.model.inputs
    # The audit watches the latency timing and the sweeps; parallel streams oversubscribe on purpose.
    auditor = _auditor(job, timer.label).start()
    with EnergyWindow(job.energy, device_of(job.spec.config)) as energy:
        timing = time_callable(session.run, pool, settings=settings, sync=timer.sync,
                               event_timer=timer.event_timer)

    fixed = None if job.spec.dynamic_batch and inputs.dynamic_batch else inputs.batch
    compared = _val_or_fidelity_inputs(job, inputs)
    outputs = [_run_in_chunks(session, f, fixed) for f in compared]
    # The first input once more: a model that keeps state between calls (a streaming voice-activity
    # model) or draws random numbers answers it differently, and then no comparison with it means anything.
    drift = repeat_drift(outputs[0], _run_in_chunks(session, compared[0], fixed)) if compared else 0.0

    # The candidate's peak memory is read here, at the model's own batch: VmHWM only grows, and
    # the sweep's larger batches would otherwise be charged to every swept candidate but not to
    # fixed-shape ones. Each sweep point records its own peak.
    peak_at_batch = peak_rss_bytes()
    cuda_peak = cuda_peak_bytes()
    # A candidate dropped as clearly slower gets no sweep: how it scales does not matter to the decision.
    dropped = str(timing.stopped_by) == "dropped"
    sweep_max = 0 if dropped else job.sweep_max_batch
    sweep = None
    skipped = ""
    if sweep_max > 1 and not inputs.dynamic_batch:
        skipped = (f"no batch sweep: the model's inputs fix the batch at {inputs.batch} "
                   f"({inputs.describe()})")
    elif sweep_max > 1 and not job.spec.dynamic_batch:
        skipped = "no batch sweep: this candidate's runtime takes one fixed batch size"
    elif sweep_max > 1:
        def run_for_batch(batch: int):
            feeds = make_feeds(inputs.with_batch(batch), count=2, seed=2)
            return session.run, [session.prepare(f) for f in feeds]

        # Each batch is estimated before it is allocated, so the sweep stops short of an OOM kill.
        guard = sweep_guard(job.footprint or estimate_footprint(inputs), budget_bytes=job.memory_budget_bytes,
                            gpu=bool(getattr(session, "needs_sync", False)))
        sweep = throughput_sweep(run_for_batch, max_batch=sweep_max,
                                 memory_budget_bytes=job.memory_budget_bytes,
                                 settings=MeasureSettings.quick(), memory_probe=current_rss_bytes,
                                 sync=timer.sync, time_limit_s=QUICK_SWEEP_S if job.quick else None,
                                 measured_p50_ms={inputs.batch: timing.stats.p50_ms}, **guard)
    sequence = _sequence_sweep(session, inputs, timer) if job.sequence_sweep else ([], "")
    audit = auditor.finish()
    streams = _streams(session, job, sweep) if job.measures_streams and not dropped else None
    if sweep is None:
        from planner.measure.sweep import ThroughputPoint, ThroughputSweep

        # No sweep asked for: the main timing is itself a measured point. Samples/s counts the rows
        # one call really processes (a fixed-batch session pads each input to its own batch).
        p50 = timing.stats.p50_ms
        rows = job.spec.rows_per_call or inputs.batch
        sweep = ThroughputSweep(points=(ThroughputPoint(rows, p50, rows * 1e3 / p50, None),),
                                knee_batch=None, stopped_reason="")
    return {
        "timing": timing,
        "sweep": sweep,
        "outputs": outputs,
        "peak_rss_bytes": peak_at_batch,
        "rss_before_open_bytes": rss_before,
        "cuda_peak_bytes": cuda_peak,
        "info": {**session.info(), "timer": timer.label, "input_pool": len(pool),
                 **({"repeat_drift": drift} if drift > REPEAT_TOLERANCE else {}),
                 **({"sweep_skipped": skipped} if skipped else {}),
                 **({"sequence_sweep_stopped": sequence[1]} if sequence[1] else {}),
                 **({"streams_skipped": streams.skipped} if streams and streams.skipped else {})},
        "threads": thread_settings(),
        "audit": audit,
        "sequence_points": sequence[0],
        "stream_points": streams.points if streams else (),
        "energy": energy.reading,
    }


def open_timed(job: MeasureJob, plugin: Any = None) -> tuple[Any, Any, list]:
    """Worker side: (session, its timer, the prepared pool of POOL_SIZE distinct inputs) for the job's candidate.

    Every timing of a candidate (a lone one here, interleaved turns in planner.measure.interleave) opens it this
    way, so their figures are of the same kind. GPU sessions (those that declare needs_sync) are timed with CUDA
    events; see session_timer.
    """
    from planner.measure.timer import session_timer
    from planner.plugins import get_plugin

    session = (plugin or get_plugin(job.spec.plugin)).open(job.spec, job.model)
    timer = session_timer(session)
    pool = [session.prepare(f) for f in make_feeds(job.model.inputs, count=POOL_SIZE, seed=1)]
    return session, timer, pool


def _streams(session, job: MeasureJob, sweep):
    """Rows/s at the best batch one request at a time and with the runtime's streams (None: no such mode)."""
    from planner.measure.streams import measure_streams

    inputs = job.model.inputs
    best = max(sweep.points, key=lambda p: p.samples_per_s) if sweep and sweep.points else None
    batch = best.batch if best is not None and job.spec.dynamic_batch and inputs.dynamic_batch else inputs.batch
    feed = make_feeds(inputs.with_batch(batch) if batch != inputs.batch else inputs, count=1, seed=3)[0]
    return measure_streams(session, session.prepare(feed), batch=batch,
                           rows=job.spec.rows_per_call or batch, quick=job.quick)


def _auditor(job: MeasureJob, timer_label: str):
    """The environment audit for this job: the threads it runs (its setting, else torch's pool), NVML on a GPU."""
    import sys

    from planner.measure.audit import Auditor
    from planner.measure.timer import HOST_CLOCK

    config = job.spec.config
    threads = config.get("intra_op_threads") or config.get("threads")
    torch = sys.modules.get("torch")
    if not threads and torch is not None and hasattr(torch, "get_num_threads"):
        threads = torch.get_num_threads()
    gpu = 0 if timer_label != HOST_CLOCK or str(config.get("device", "")).startswith("cuda") else None
    return Auditor(threads_used=int(threads) if threads else None, gpu_index=gpu)


def _sequence_sweep(session, inputs: ModelInputs, timer) -> tuple[list[SequencePoint], str]:
    """Latency at shorter sequence lengths (batch as given); stops at the first length that fails."""
    from planner.measure import MeasureSettings, time_callable

    length = inputs.sequence
    if length is None:
        return [], ""
    points: list[SequencePoint] = []
    for n in sequence_lengths(length):
        feeds = make_feeds(inputs.with_sequence(n), count=2, seed=2)
        try:
            prepared = [session.prepare(f) for f in feeds]
            timing = time_callable(session.run, prepared, settings=MeasureSettings.quick(), sync=timer.sync)
        except Exception as exc:  # noqa: BLE001 - a runtime fixed to one length raises its own types
            return points, f"sequence length {n} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        p50 = timing.stats.p50_ms
        points.append(SequencePoint(length=n, latency_p50_ms=p50,
                                    tokens_per_s=n * inputs.batch * 1e3 / p50 if p50 > 0 else 0.0))
    return points, ""


# Two calls on the same input agree to rounding in any deterministic runtime; past this the model itself varies.
REPEAT_TOLERANCE = 1e-4


def repeat_drift(first: np.ndarray, again: np.ndarray) -> float:
    """How far a second call on the same input moved the output: ||a - b|| / ||a|| (0 when identical)."""
    a, b = np.asarray(first, dtype=np.float64).ravel(), np.asarray(again, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    norm = float(np.linalg.norm(a))
    gap = float(np.linalg.norm(a - b))
    return gap / norm if norm > 0 else (0.0 if gap == 0 else float("inf"))


def _run_in_chunks(session: Any, feed: Feed, batch: int | None) -> np.ndarray:
    """The session's output for `feed`; a candidate compiled for a fixed batch runs it `batch` rows at a time.

    Validation data comes in batches of its own size (64 rows, say), which a fixed-shape compile
    cannot take: it is split, the last chunk padded by repeating its final row, and the outputs
    joined and trimmed to the rows fed.
    """
    # A scalar input (a sample rate) has no rows: it goes with every chunk as it is.
    rows = next((len(a) for a in feed.values() if np.ndim(a)), batch or 1)
    if batch is None or rows == batch:
        return session.to_numpy(session.run(session.prepare(feed)))
    parts = []
    for start in range(0, rows, batch):
        chunk = {name: a[start:start + batch] if np.ndim(a) else a for name, a in feed.items()}
        short = batch - min(rows - start, batch)
        if short:
            chunk = {name: np.concatenate([a, np.repeat(a[-1:], short, axis=0)]) if np.ndim(a) else a
                     for name, a in chunk.items()}
        parts.append(session.to_numpy(session.run(session.prepare(chunk))))
    return np.concatenate(parts)[:rows]


def _val_or_fidelity_inputs(job: MeasureJob, inputs: ModelInputs) -> list[Feed]:
    if job.val_data:
        from planner.models.valdata import split_val_data

        # The judged part only: INT8 calibration saw the other one (the baseline's reference is on these too).
        return [feed for feed, _ in split_val_data(Path(job.val_data), inputs=inputs).judged]
    return fidelity_inputs(inputs, count=job.fidelity_batches)


def reproduce_command(model: ModelRef, spec: CandidateSpec, *, quick: bool = False,
                      plan_dir: str | None = None) -> str:
    """The shell command that re-measures this candidate with `planner bench`; artifacts inside `plan_dir` (the
    plan's folder) are named relative to it, so the command runs from that folder."""
    if plan_dir:
        spec = spec.relative_to(plan_dir)
    parts = ["planner", "bench", "--model", model.source, *model.inputs.cli_args(),
             "--candidate", spec.to_text()]
    if model.trust_code:
        parts.append("--trust-code")
    if quick:
        parts.append("--quick")
    return shlex.join(parts)


def measure(job: MeasureJob, *, timeout_s: float = 600.0) -> tuple[CandidateResult, list[np.ndarray] | None]:
    """Parent side: run the job in a worker; a crash, error or timeout becomes a failed result."""
    from planner.measure import WorkerStatus, run_isolated
    from planner.measure.tree_memory import plan_memory

    spec = job.spec
    reproduce = reproduce_command(job.model, spec, quick=job.quick, plan_dir=job.plan_dir)
    base = CandidateResult(plugin=spec.plugin, label=spec.label, config=spec.config, precision=str(spec.precision),
                           status=Status.FAILED, reproduce=reproduce,
                           spec=to_data(spec), size_bytes=_artifact_size(spec))
    env, too_big = fitted_env(job)  # raises before any worker starts when the model cannot fit at all
    if too_big:
        return dataclasses.replace(base, status=Status.SKIPPED, reason=f"not measured: {too_big}"), None
    start = time.perf_counter()
    with plan_memory().window() as tree:
        outcome = run_isolated(run_job, job, timeout_s=timeout_s, env=env or None)
    wall = time.perf_counter() - start
    base = dataclasses.replace(base, tree_peak_bytes=tree.peak_bytes)
    if outcome.status is not WorkerStatus.OK:
        reason = outcome.reason
        info: dict[str, Any] = {}
        if outcome.status is WorkerStatus.TIMEOUT:
            reason = f"{reason}; the candidate hung or is too slow here"
        else:
            reason, details = plain_failure(reason)
            if details:
                info["details"] = details
        return dataclasses.replace(base, reason=reason, wall_s=wall, info=info), None
    value = outcome.value
    timing = value["timing"]
    sweep = value["sweep"]
    if value["cuda_peak_bytes"]:
        peak, basis = value["cuda_peak_bytes"], "CUDA allocator peak"
    else:
        peak, basis = value["peak_rss_bytes"], "worker process peak RSS"
    info = dict(value["info"])
    if sweep and sweep.stopped_reason:
        info["sweep_stopped"] = sweep.stopped_reason
    result = dataclasses.replace(
        base, status=Status.OK, latency_ms=timing.stats, stopped_by=str(timing.stopped_by),
        throughput=tuple(sweep.points) if sweep else (),
        knee_batch=sweep.knee_batch if sweep else None,
        peak_memory_bytes=int(peak) if peak else None, memory_basis=basis,
        info=info, threads=value["threads"], wall_s=wall,
        sequence_sweep=tuple(value["sequence_points"]), streams=tuple(value.get("stream_points", ())),
        energy=per_inference(job.energy, value.get("energy"), calls=timing.warmup_calls + len(timing.samples_ms),
                             device=device_of(spec.config)))
    if value.get("audit") is not None:
        from planner.measure.audit import with_weights

        result = dataclasses.replace(result, audit=with_weights(value["audit"],
                                                                base.size_bytes or job.weights_bytes))
    return result, value["outputs"]


def fitted_env(job: MeasureJob) -> tuple[dict[str, str], str]:
    """The worker's variables (the spec's, then the job's) sized to the memory and cores free now, and why it
    cannot run ('' when it can).

    Read live, just before the worker starts: the planner has grown since the hardware was detected. A
    candidate whose plugin caps torch.compile's compiler processes (`TORCHINDUCTOR_COMPILE_THREADS` in its
    env) gets no more than fit now, nor more than the user's own setting; when not even one fits beside its
    worker, the candidate is not measured and the reason says so. A model larger than the whole memory
    limit raises a PlannerError (see `check_model_fits`).
    """
    import os

    from planner.hardware.memory_limits import COMPILE_THREADS_VAR, check_model_fits, compile_fit, current_limits

    # The spec's own variables first: a caller that gives none (`planner bench`, reproducing a candidate) still
    # runs it as the plan did; the job's own win where both set one.
    spec_env = job.spec.config.get("env") if isinstance(job.spec.config, dict) else None
    env = {str(k): str(v) for k, v in {**(spec_env if isinstance(spec_env, dict) else {}), **(job.env or {})}.items()}
    try:
        limits = current_limits()
    except (OSError, ValueError):
        return env, ""  # unreadable limits must not stop a measurement: the worker runs as asked
    check_model_fits(job.weights_bytes, limits)
    if COMPILE_THREADS_VAR not in env:
        return env, ""
    fit = compile_fit(limits, weights_bytes=job.weights_bytes,
                      activation_bytes=job.footprint.peak_bytes if job.footprint else None,
                      gpu=device_of(job.spec.config).startswith("cuda"))
    if fit.count < 1:
        return env, fit.reason
    caps = [fit.count]
    for text in (env[COMPILE_THREADS_VAR], os.environ.get(COMPILE_THREADS_VAR, "")):
        if text.strip().isdigit() and int(text) > 0:
            caps.append(int(text))
    env[COMPILE_THREADS_VAR] = str(min(caps))
    return env, ""


# Past this, a failure's reason is a runtime's dump rather than a sentence.
_REASON_CHARS = 300


def plain_failure(reason: str) -> tuple[str, str]:
    """(one plain line, the whole text or '') for a worker's failure 'Type: message'.

    A runtime's own dump (OpenVINO's conversion report runs to dozens of lines of source locations)
    becomes its message in one line; the whole text is kept as details. A short reason is kept as it is.
    """
    if "\n" not in reason.strip() and len(reason) <= _REASON_CHARS:
        return reason, ""
    kind, _, message = reason.partition(": ")
    line = f"{kind}: {runtime_error_line(RuntimeError(message))}" if message else reason[:_REASON_CHARS]
    return line, reason


def _artifact_size(spec: CandidateSpec) -> int | None:
    """The bytes of every file the candidate needs (its plugin's `artifact_files`, the set its hand-over
    package holds: an OpenVINO IR's .bin beside its .xml); None when it has no files."""
    from planner.plugins import Plugin, get_plugin

    try:
        plugin = get_plugin(spec.plugin)
    except KeyError:
        plugin = Plugin()  # not installed here: its artifacts as the contract reads them by default
    try:
        files = plugin.artifact_files(spec)
    except Exception:  # noqa: BLE001 - a plugin's reading of its own files may fail in any way; size is advice
        files = [Path(p) for p in spec.artifacts.values() if Path(p).is_file()]
    return sum(f.stat().st_size for f in files) if files else None
