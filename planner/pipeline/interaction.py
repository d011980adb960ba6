"""The interaction step: the best architecture change and the best hardware candidate, measured
alone and together, the same way, to tell whether they amplify or cancel each other.

The four cells (baseline, architecture only, hardware only, combined) are timed back to back in
fresh workers with one method, so the factor compares like with like. The combined cell rebuilds
the hardware candidate on the transformed model: its plugin builds its artifacts (an ONNX export,
say) from the changed module, and its worker loads the model with the transform re-applied.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner import units
from planner.events import Event
from planner.pipeline.search import typical_wall_s
from planner.results import CandidateResult, Status
from planner.results import names as plain
from planner.results.interaction import Interaction, InteractionCell, interaction_factor, verdict

if TYPE_CHECKING:
    from planner.pipeline.candidates import CandidateRun
    from planner.plugins import CandidateSpec, ModelRef

def _is_architecture(c: CandidateResult) -> bool:
    """Whether the candidate changes the model itself (its plugin declared a transform)."""
    return bool(c.declared and c.declared.transforms_model)


def _needs_retraining(c: CandidateResult) -> bool:
    """A new architecture (new weights): its speed is measured, its accuracy needs training first."""
    return bool(c.declared and c.declared.arithmetic == "structural")


def pairs(candidates: Sequence[CandidateResult], order: Sequence[int]) -> list[tuple[CandidateResult, CandidateResult]]:
    """(architecture, hardware) pairs to measure: the fastest architecture change that passed its
    fidelity gate, and the measured redesign (if any), each with the best-ranked hardware candidate;
    and a passing change made for one precision (its transform's "pairs_with") with that precision's best."""
    hardware = next((candidates[i] for i in order if not candidates[i].is_reference
                     and not _is_architecture(candidates[i]) and candidates[i].status is Status.OK), None)
    if hardware is None:
        return []
    measured = [c for c in candidates if _is_architecture(c) and c.spec and c.speedup]
    passing = [c for c in measured if c.status is Status.OK]
    redesigns = [c for c in measured if _needs_retraining(c)]
    chosen = ([max(passing, key=lambda c: c.speedup or 0.0)] if passing else []) + redesigns[:1]
    found = [(arch, hardware) for arch in chosen]
    # A change made for one precision (channels padded to INT8's multiple) is paired with that precision's
    # best candidate: its own fp32 timing says little about what it is for.
    for arch in passing:
        wanted = ((arch.config or {}).get("transform") or {}).get("pairs_with")
        match = next((candidates[i] for i in order if not candidates[i].is_reference
                      and not _is_architecture(candidates[i]) and candidates[i].status is Status.OK
                      and candidates[i].precision == wanted), None) if wanted else None
        if match is not None and not any(a is arch and h is match for a, h in found):
            found.append((arch, match))
    return found


def measure_interactions(run: "CandidateRun", candidates: Sequence[CandidateResult], order: Sequence[int], *,
                         timeout_s: float) -> tuple[Interaction, ...]:
    """Each pair's four cells and its interaction factor; a pair whose cell fails says which and why.

    A cell two pairs share (the baseline, and usually the hardware candidate) is measured once in this
    step and reused by the next pair. A quick plan measures only what it does not have: the baseline,
    architecture and hardware cells are the plan's own figures (the ones the table ranks), and only the
    combined cell is timed, so each fact carries one number.
    """
    found = []
    readings: dict[str, list[InteractionCell]] = _plan_figures(run, candidates) if run.quick else {}
    planned = set(readings)
    for arch, hw in pairs(candidates, order):
        if run.cancel.cancelled:
            break
        cells = 4 - sum(1 for c in (arch, hw) if c.spec and _key_of(c) in readings) - bool(readings)
        cost = cells * typical_wall_s(candidates)  # a cell takes what a candidate's screen took
        if not run.budget.affords(cost):
            cut = run.budget.cut_step(f"the interaction of {plain.title(arch)} and {plain.title(hw)} not measured",
                                      f"its {cells} cell{'s' if cells != 1 else ''} take about {cost:.0f} s and "
                                      f"{run.budget.out_of_time()}")
            run.on_event(run.budget.event(cut))
            continue
        run.on_event(Event("stage", f"interaction: {arch.label} x {hw.label}", stage="interaction"))
        found.append(_measure_pair(run, arch, hw, timeout_s=timeout_s, readings=readings, planned=planned))
    return tuple(found)


def _plan_figures(run: "CandidateRun", candidates: Sequence[CandidateResult]) -> dict[str, list[InteractionCell]]:
    """The plan's own measurements as interaction cells, keyed like the cells they stand for."""
    from planner.codec import from_data
    from planner.plugins import CandidateSpec, ModelRef

    ref = ModelRef.of(run.model)
    figures: dict[str, list[InteractionCell]] = {}
    base_spec = from_data(run.baseline.spec, CandidateSpec)
    figures[_key(base_spec, ref)] = [InteractionCell("baseline", base_spec.label,
                                                     p50_ms=run.baseline.latency_ms.p50_ms,
                                                     energy=getattr(run.baseline, "energy", None))]
    for c in candidates:
        if c.spec and c.measured and c.p50 and not c.is_reference:
            disturbed = bool(c.audit is not None and c.audit.disturbed)
            figures[_key(from_data(c.spec, CandidateSpec), ref)] = [
                InteractionCell("", c.label, p50_ms=c.p50, disturbed=disturbed, energy=c.energy)]
    return figures


def _key_of(c: CandidateResult) -> str:
    from planner.codec import from_data
    from planner.plugins import CandidateSpec

    return spec_key(from_data(c.spec, CandidateSpec), None)


def _rounds(quick: bool) -> int:
    """Two rounds, the second in reverse order, so load that drifts biases no cell more than another; a quick
    plan spends one: its screen already trades that care for time."""
    return 1 if quick else 2


def _measure_pair(run: "CandidateRun", arch: CandidateResult, hw: CandidateResult, *, timeout_s: float,
                  readings: dict[str, list[InteractionCell]] | None = None,
                  planned: set[str] | None = None) -> Interaction:
    from planner.codec import from_data
    from planner.plugins import CandidateSpec, ModelRef

    readings = {} if readings is None else readings
    base_ref = ModelRef.of(run.model)
    transform = dict(arch.config["transform"])
    arch_ref = dataclasses.replace(base_ref, transform=transform)
    base_spec = from_data(run.baseline.spec, CandidateSpec)
    hw_spec = from_data(hw.spec, CandidateSpec)
    combined_spec, why = _rebuild_on(run, hw_spec, arch_ref)
    jobs: list[tuple[str, str, CandidateSpec | None, ModelRef, str]] = [
        ("baseline", base_spec.label, base_spec, base_ref, ""),
        ("architecture", arch.label, from_data(arch.spec, CandidateSpec), base_ref, ""),
        ("hardware", hw.label, hw_spec, base_ref, ""),
        ("combined", f"{arch.label} + {hw.label}", combined_spec, arch_ref, why),
    ]
    rounds: dict[str, list[InteractionCell]] = {name: [] for name, *_ in jobs}
    reused: list[str] = []
    from_plan: list[str] = []
    for name, label, spec, ref, _ in jobs:
        key = _key(spec, ref) if spec is not None else ""
        earlier = readings.get(key) if spec is not None else None
        if earlier:
            rounds[name] = [dataclasses.replace(c, cell=name, label=label) for c in earlier]
            (from_plan if key in (planned or ()) else reused).append(name)
    reused_all = reused + from_plan
    for order in (jobs, jobs[::-1])[:_rounds(run.quick)]:
        for name, label, spec, ref, reason in order:
            if name in reused_all:
                continue
            if spec is None:
                rounds[name].append(InteractionCell(name, label, status=str(Status.FAILED), reason=reason))
            elif not rounds[name] or rounds[name][0].p50_ms is not None:
                rounds[name].append(_time(run, name, label, spec, ref, timeout_s=timeout_s))
    for name, _label, spec, ref, _ in jobs:
        if spec is not None and name not in reused_all:
            readings[_key(spec, ref)] = rounds[name]
    cells = [_best(rounds[name]) for name, *_ in jobs]
    base = cells[0].p50_ms
    cells = [dataclasses.replace(c, speedup=base / c.p50_ms if base and c.p50_ms else None) for c in cells]
    factor = result = None
    speedups = [c.speedup for c in cells[1:]]
    if all(speedups):
        a, h, both = (float(s) for s in speedups)  # type: ignore[arg-type]
        factor = interaction_factor(a, h, both)
        result = verdict(factor)
        run.on_event(Event("log", f"interaction {arch.label} x {hw.label}: architecture {units.speedup(a)}, "
                                  f"hardware {units.speedup(h)}, combined {units.speedup(both)}; "
                                  f"factor {factor:.2f} ({result})"))
    rounds_text = ("in one round (a quick plan)" if _rounds(run.quick) == 1
                   else "in two rounds (the second in reverse order), keeping each cell's faster p50")
    shared = (f"; the {' and '.join(reused)} cell{'s' if len(reused) > 1 else ''} reused from the pair measured "
              "before it in this step" if reused else "")
    method = ("each cell timed in a fresh worker by the same method as every candidate "
              f"({'the quick screen' if run.quick else 'the full method'}), {rounds_text}, at batch "
              f"{run.model.inputs.batch}{shared}; speedup is the baseline cell's p50 over the cell's p50")
    if from_plan:
        timed = [name for name, *_ in jobs if name not in reused_all]
        method = (f"the {_join(timed) if timed else 'no'} cell{'s' if len(timed) != 1 else ''} timed in a fresh "
                  f"worker by the quick screen's method at batch {run.model.inputs.batch}; the {_join(from_plan)} "
                  f"cell{'s are' if len(from_plan) != 1 else ' is'} the plan's own figure"
                  f"{'s' if len(from_plan) != 1 else ''} (the one{'s' if len(from_plan) != 1 else ''} its table "
                  f"ranks), not timed again{shared}; speedup is the baseline "
                  "cell's p50 over the cell's p50")
    return Interaction(architecture=arch.label, hardware=hw.label, cells=tuple(cells), factor=factor,
                       verdict=result or "", method=method,
                       needs_retraining=_needs_retraining(arch))


def _key(spec: "CandidateSpec", ref: "ModelRef") -> str:
    """What makes two cells the same measurement: the candidate and the model it runs (transform included)."""
    return spec_key(spec, ref.transform)


def spec_key(spec: "CandidateSpec", transform: dict | None) -> str:
    """A cell's identity from the candidate's spec and the transform applied to the model (None: none)."""
    return spec.to_text() + "|" + json.dumps(transform or {}, sort_keys=True)


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _best(readings: list[InteractionCell]) -> InteractionCell:
    """The faster of a cell's readings (a failed reading only when none succeeded)."""
    timed = [c for c in readings if c.p50_ms is not None]
    if not timed:
        return readings[0]
    best = min(timed, key=lambda c: c.p50_ms or 0.0)
    return dataclasses.replace(best, disturbed=all(c.disturbed for c in timed))


def _rebuild_on(run: "CandidateRun", spec: "CandidateSpec", ref: "ModelRef") -> tuple["CandidateSpec | None", str]:
    """The hardware candidate built again on the transformed model (its artifacts come from the changed module)."""
    from planner.plugins import PlanContext, get_plugin

    if not spec.artifacts:
        return spec, ""  # its worker loads the model itself, transform included
    try:
        plugin = get_plugin(spec.plugin)
        model = ref.load()
        ctx = PlanContext(hw=run.hw, model=model, workdir=run.workdir / "interaction", quick=run.quick,
                          cancel=run.cancel, log=lambda msg: run.on_event(Event("log", msg)),
                          val_data=run.val_data, val_data_basis=run.val_data_basis,
                          options=run.plugin_options)
        ctx.workdir.mkdir(parents=True, exist_ok=True)
        for candidate in plugin.candidates(ctx):
            if candidate.label == spec.label:
                return candidate, ""
    except Exception as exc:  # noqa: BLE001 - a transform that breaks a runtime's export fails this cell only
        return None, f"building {spec.label} on the transformed model failed: {type(exc).__name__}: {exc}"
    return None, f"{spec.plugin} offered no {spec.label} candidate for the transformed model"


def _time(run: "CandidateRun", name: str, label: str, spec: "CandidateSpec", ref: "ModelRef", *,
          timeout_s: float) -> InteractionCell:
    from planner.measure.evaluate import MeasureJob, fidelity_batch_count, measure

    run.on_event(Event("log", f"interaction cell {name}: measuring {label}"))
    job = MeasureJob(model=ref, spec=spec, quick=run.quick, sweep_max_batch=0,
                     fidelity_batches=fidelity_batch_count(run.quick), env=dict(spec.config.get("env", {})),
                     streams=False, energy=getattr(run.baseline, "energy_source", None))
    result, _ = measure(job, timeout_s=timeout_s)
    if result.status is not Status.OK or not result.p50:
        return InteractionCell(name, label, status=str(result.status), reason=result.reason)
    disturbed = bool(result.audit is not None and result.audit.disturbed)
    return InteractionCell(name, label, p50_ms=result.p50, disturbed=disturbed, energy=result.energy)
