"""Write the hand-over packages under deploy/: the winner and each roadmap phase's best candidate.

Which code writes a candidate's artifact and run.py is its plugin's (`Plugin.package`); this module picks
the candidates (`packaged_roles`), adds what every package holds (sample inputs with the original's outputs,
requirements.txt, README.md, manifest.json) and records one `Deployment` per role. A candidate whose plugin
has no exporter, or whose export fails, is replaced by the next best that can be packaged, and the record
says why; one package failing never ends the plan.

The manifest's p50 is the one `planner verify` and `python run.py --check` compare with, so it is a
full-method figure of the program run.py runs: where the plan's figure for the candidate is a quick screen's
only (not confirmed), rests on fewer calls than the full method takes, or run.py runs another program than
the one the plan timed (a torch.export archive of the eager module: `PackageFiles.differs_from_measured`),
the written package is timed by the plan's full method before the manifest is written, and that figure,
with its sample count, is the one recorded (the plan's stays beside it). Paths in the manifest are relative
to the plan's folder (where results.json is).
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from planner import __version__, units
from planner.deploy.manifest import FORMAT, hash_files, write_manifest
from planner.deploy.rule import LATENCY_TOLERANCE, rule_of
from planner.deploy.runfile import readme_text, requirements_text, run_footer
from planner.deploy.samples import SAMPLES_NAME, write_samples
from planner.errors import PlannerError, runtime_error_line
from planner.results import CandidateResult, Deployment, PlanResults, Status, from_data, to_data

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import Feed
    from planner.plugins import ModelRef, Plugin
    from planner.results.values import LatencyStats

DEPLOY_DIR = "deploy"
WINNER = "winner"
PHASES = {1: "quick wins", 2: "extra impact", 3: "architecture"}


@dataclass(frozen=True)
class Role:
    """Why a package is written: the plan's winner, or one roadmap phase's best; and the candidates in line."""

    name: str  # "winner", "phase 1", ...
    folder: str  # its folder under deploy/
    order: tuple[int, ...]  # candidate indices, best first: the first that can be packaged is
    # Faster candidates of the phase that are not in line (a redesign that needs retraining): the record names them.
    left_out: tuple[int, ...] = ()

    @property
    def words(self) -> str:
        """The role as the README says it."""
        if self.name == WINNER:
            return "winner (its best ranked candidate)"
        phase = int(self.name.split()[-1])
        return f"best candidate of roadmap phase {phase} ({PHASES[phase]})"


class NotPackagedError(Exception):
    """Why one candidate has no package: no exporter, an export that failed, a plugin not installed."""


def packaged_roles(results: PlanResults) -> list[Role]:
    """The packages a plan writes, each with its candidates in line, best first: the winner (every ranked
    candidate in rank order) and each roadmap phase that has a step to package.

    A phase's line is its ranked candidates in rank order, after any candidate of the phase the fidelity check
    could not establish (on generated inputs) that is faster than the baseline and than the phase's best ranked
    one, fastest first: the roadmap lists it as the phase's step, so it gets the package, and its record says
    the check could not establish it. A faster redesign that needs retraining cannot be packaged (its weights
    are new): it is named in `left_out`.
    """
    order = results.ranking.order if results.ranking else ()
    cands = results.candidates
    found = [Role(WINNER, WINNER, tuple(order))]
    for phase, words in PHASES.items():
        ranked = [i for i in order if _phase(cands[i]) == phase]
        bar = cands[ranked[0]].p50 if ranked else None
        mine = [i for i, c in enumerate(cands) if _phase(c) == phase and i not in order and _faster(c, bar)]
        mine.sort(key=lambda i: cands[i].p50 or 0.0)  # every one was timed (_faster)
        pending = [i for i in mine if cands[i].status is Status.UNCONFIRMED]
        retrain = tuple(i for i in mine if _needs_retraining(cands[i]))
        members = (*pending, *ranked)
        if members or retrain:
            found.append(Role(f"phase {phase}", f"phase-{phase}-{words.replace(' ', '-')}", members, retrain))
    return found


def _faster(candidate: CandidateResult, bar: float | None) -> bool:
    """Whether it was timed faster than the baseline and than `bar` (a p50 in ms; None: no bar)."""
    p50 = candidate.p50
    return p50 is not None and (candidate.speedup or 0) > 1 and (bar is None or p50 < bar)


def _needs_retraining(candidate: CandidateResult) -> bool:
    """Whether its plugin declared a new architecture, whose weights need training before it can be deployed."""
    from planner.plugins import Arithmetic

    return candidate.declared is not None and candidate.declared.arithmetic == Arithmetic.STRUCTURAL


def _phase(candidate: CandidateResult) -> int | None:
    """The roadmap phase its plugin declared; None for the baseline and files written before declarations."""
    return candidate.declared.phase if candidate.declared is not None else None


def write_deployments(results: PlanResults, *, model: "ModelRef", feeds: Sequence["Feed"],
                      reference: Sequence["np.ndarray"], out_dir: Path,
                      find_plugin: Callable[[str], "Plugin"] | None = None,
                      warn: Callable[[str], None] = lambda message: None) -> tuple[Deployment, ...]:
    """Write deploy/ under `out_dir` for the winner and each phase's best; one Deployment per role.

    `feeds` and `reference` are the sample inputs and the original model's first output on each (see
    planner.deploy.samples). A phase's best that is already packaged (the winner) is packaged once: its
    record points at that folder. A failure is recorded in the Deployment's reason and as a warning.
    """
    from planner.plugins import get_plugin

    find = find_plugin or get_plugin
    root = out_dir / DEPLOY_DIR
    if root.exists():
        shutil.rmtree(root)  # the last plan's packages: the folder is the plan's own
    written: dict[int, tuple[str, str]] = {}  # candidate index -> (its package folder under out_dir, its runtime)
    failed: dict[int, str] = {}  # candidate index -> why it could not be packaged
    records = []
    for role in packaged_roles(results):
        record = _package_role(role, results, model=model, feeds=feeds, reference=reference, out_dir=out_dir,
                               find=find, written=written, failed=failed)
        if not record.folder:
            warn(f"no hand-over package for the {role.words}: {record.reason}")
        records.append(record)
    return tuple(records)


def _package_role(role: Role, results: PlanResults, *, model: "ModelRef", feeds: Sequence["Feed"],
                  reference: Sequence["np.ndarray"], out_dir: Path, find: Callable[[str], "Plugin"],
                  written: dict[int, tuple[str, str]], failed: dict[int, str]) -> Deployment:
    """The first candidate in the role's order that is (or can be) packaged, and why faster ones were not."""
    left_out = [f"{c.label}, {units.speedup(c.speedup)} the baseline, cannot be packaged "
                f"({(c.reason or 'a new architecture').rstrip('.')})"
                for c in (results.candidates[i] for i in role.left_out)]
    if not role.order:
        why = "; ".join(left_out) or "no candidate passed the fidelity check, so none is ranked"
        first = role.left_out[0] if role.left_out else None
        return Deployment(role=role.name, label=results.candidates[first].label if first is not None else "",
                          candidate=first, reason=why)
    best = results.candidates[role.order[0]]
    passed_over: list[str] = []
    for index in role.order:
        candidate = results.candidates[index]
        stands_in = "; ".join(p for p in (
            left_out and "; ".join(left_out),
            passed_over and f"stands in for {best.label}, the best in line: " + "; ".join(passed_over),
            candidate.status is Status.UNCONFIRMED and UNCONFIRMED_WORDS) if p)
        if index in written:
            folder, runtime = written[index]
            same = f"the same candidate as the {WINNER}, packaged once in {folder}"
            return Deployment(role=role.name, label=candidate.label, candidate=index, folder=folder, runtime=runtime,
                              reason="; ".join(p for p in (same, stands_in) if p))
        if index not in failed:
            dest = out_dir / DEPLOY_DIR / role.folder
            try:
                runtime, timed = write_package(candidate, role=role, model=model, feeds=feeds, reference=reference,
                                        dest=dest, hardware=results.hardware, find=find, quick=results.quick,
                                        plan_dir=out_dir)
            except NotPackagedError as exc:
                failed[index] = str(exc)
                shutil.rmtree(dest, ignore_errors=True)
            else:
                written[index] = (dest.relative_to(out_dir).as_posix(), runtime)
                return Deployment(role=role.name, label=candidate.label, candidate=index, folder=written[index][0],
                                  runtime=runtime, reason=stands_in, package_p50_ms=timed[0], package_basis=timed[1])
        passed_over.append(f"{candidate.label} could not be packaged ({failed[index]})")
    nothing = "no candidate in line could be packaged: " + "; ".join(passed_over)
    return Deployment(role=role.name, label=best.label, candidate=role.order[0],
                      reason="; ".join([*left_out, nothing]))


UNCONFIRMED_WORDS = ("packaged though the plan's fidelity check could not establish it on the inputs it had: check "
                     "it on your data before relying on it")
"""What the record of a package whose candidate's fidelity is not established says."""


def write_package(candidate: CandidateResult, *, role: Role, model: "ModelRef", feeds: Sequence["Feed"],
                  reference: Sequence["np.ndarray"], dest: Path, hardware: "HardwareProfile | None",
                  find: Callable[[str], "Plugin"], quick: bool = False,
                  plan_dir: Path | None = None) -> tuple[str, tuple[float | None, str]]:
    """Write one package into `dest` (made afresh); the runtime its run.py uses, and the package's own p50 with why
    it was timed (None, '' where the manifest holds the plan's figure). NotPackagedError says why not.

    `quick`: the plan screened its candidates quickly (a candidate it did not confirm has its package timed by
    the full method here, see the module's docstring). `plan_dir`: the plan's folder (where results.json is;
    default: two levels above `dest`), which the manifest's paths are relative to.
    """
    from planner.measure.evaluate import reproduce_command
    from planner.plugins import CandidateSpec

    plan_dir = plan_dir if plan_dir is not None else dest.parent.parent
    try:
        plugin = find(candidate.plugin)
    except KeyError as exc:
        raise NotPackagedError(f"its plugin {candidate.plugin} is not installed here: {exc.args[0]}") from exc
    if not candidate.spec:
        raise NotPackagedError("its settings were not recorded (results written before candidates kept their spec)")
    spec = from_data(candidate.spec, CandidateSpec)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        files = plugin.package(spec, model, dest)
    except PlannerError as exc:
        raise NotPackagedError(exc.problem) from exc
    except Exception as exc:  # noqa: BLE001 - a plugin's exporter may raise anything; the plan goes on
        raise NotPackagedError(f"its exporter failed: {type(exc).__name__}: {runtime_error_line(exc)}") from exc
    if files is None:
        raise NotPackagedError(f"its plugin {candidate.plugin} has no exporter (it cannot write the candidate out "
                          "to run without the planner)")
    (dest / "run.py").write_text(files.run_py.rstrip("\n") + "\n" + run_footer(), encoding="utf-8")
    write_samples(dest / SAMPLES_NAME, feeds, reference)
    requirements, pins = requirements_text(files.requirements)
    (dest / "requirements.txt").write_text(requirements, encoding="utf-8")
    # Like with like: the p50 verify compares with is a full-method figure of the program run.py runs.
    why = _why_time_package(candidate, quick=quick, differs=files.differs_from_measured)
    timed = time_package(dest) if why else None
    measured = _measured(candidate, timed=timed, why=why, quick=quick)
    (dest / "README.md").write_text(readme_text(
        label=candidate.label, role=role.words, runtime=files.runtime, measured=_measured_words(measured),
        machine=_machine_words(hardware), fidelity=fidelity_words(candidate.fidelity), inputs=model.inputs.names,
        notes=files.notes), encoding="utf-8")
    names = [*files.files, "run.py", SAMPLES_NAME, "requirements.txt", "README.md"]
    here = spec.relative_to(plan_dir)
    write_manifest(dest, {
        "format": FORMAT,
        "role": role.name,
        # Paths relative to the plan's folder; the reproduce line re-measures with the full method, as `measured`.
        "candidate": {"label": candidate.label, "plugin": candidate.plugin, "precision": candidate.precision,
                      "spec": to_data(here), "reproduce": reproduce_command(model, here)},
        "runtime": files.runtime,
        "settings": files.settings,
        "measured": measured,
        "fidelity": to_data(candidate.fidelity) if candidate.fidelity is not None else None,
        "fidelity_rule": rule_of(candidate),
        "machine": _machine(hardware),
        "samples": {"file": SAMPLES_NAME, "count": len(feeds), "inputs": list(model.inputs.names),
                    "reference": "the original model's first output on each sample"},
        "artifact": list(files.files),
        "requirements": pins,
        "imports": list(files.imports),
        "notes": list(files.notes),
        "files": hash_files(dest, names),
        "planner_version": __version__,
        "written": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    })
    return files.runtime, ((timed.p50_ms, why) if timed is not None else (None, ""))


def _why_time_package(candidate: CandidateResult, *, quick: bool, differs: str) -> str:
    """Why the plan's figure is not the one to record for the package ('' when it is): a quick screen's only,
    too few calls for the full method (a confirmation the quick plan's allowance cut short), or another program
    than run.py runs (`differs`)."""
    from planner.measure import MeasureSettings

    lat = candidate.latency_ms
    if lat is None:
        return ""
    if quick and candidate.confirmation is None:
        return "the plan's figure is its quick screen's"
    least = MeasureSettings.default().min_samples
    if lat.samples < least:
        return f"the plan's figure rests on {lat.samples} calls, fewer than the {least} its full method takes"
    return differs


def time_package(folder: Path, *, timeout_s: float = 300.0) -> "LatencyStats":
    """The written package's run.py timed by the plan's full method in a fresh process, as planner verify times
    it (`measure_package`); NotPackagedError when it does not run."""
    from planner.deploy.verify import measure_package
    from planner.measure import WorkerStatus, run_isolated

    outcome = run_isolated(measure_package, str(folder), timeout_s=timeout_s)
    if outcome.status is not WorkerStatus.OK:
        first = outcome.reason.splitlines()[0] if outcome.reason else str(outcome.status)
        raise NotPackagedError(f"its run.py did not run when the package was timed: {first}")
    return outcome.value["stats"]


def _measured(candidate: CandidateResult, *, timed: "LatencyStats | None", why: str = "",
              quick: bool) -> dict[str, Any]:
    """The latency figures verify and run.py --check compare with: a full-method p50 with its sample count, the
    95% interval of the median where it is known, and what was timed (`basis`). `timed`: the package timed here,
    `why` (the plan's figure is a quick screen's, or run.py runs another program than the plan timed); the
    plan's figure then stays beside it (`plan`)."""
    lat = candidate.latency_ms
    if lat is None:
        return {}
    figure = timed or lat
    # None: too few samples to bound the median (a quick screen of a slow model).
    bounded = math.isfinite(figure.ci95_rel) and figure.ci95_rel > 0
    if timed is not None:
        screen = "quick screen" if quick and candidate.confirmation is None else "full method"
        basis = (f"this package timed by the plan's full method when it was written, over {timed.samples:,} calls, "
                 f"because {why}; the plan's {screen} read {units.ms(lat.p50_ms)} over {lat.samples:,} calls")
    elif candidate.confirmation is not None:
        basis = f"the plan's full method, over {lat.samples:,} calls, confirming its quick screen"
    else:
        basis = f"the plan's {'quick screen' if quick else 'full method'}, over {lat.samples:,} calls"
    data: dict[str, Any] = {
        "p50_ms": figure.p50_ms, "p90_ms": figure.p90_ms, "p95_ms": figure.p95_ms, "samples": figure.samples,
        "p50_ci95_ms": [figure.p50_ms * (1 - figure.ci95_rel), figure.p50_ms * (1 + figure.ci95_rel)]
        if bounded else None,
        "tolerance": LATENCY_TOLERANCE, "basis": basis}
    if timed is None:
        data["speedup"] = candidate.speedup
    else:
        data["plan"] = {"p50_ms": lat.p50_ms, "samples": lat.samples, "speedup": candidate.speedup,
                        "method": "quick screen" if quick and candidate.confirmation is None else "full method"}
    return data


def _measured_words(measured: dict[str, Any]) -> str:
    """'p50 0.21 ms (the plan's full method, over 9,000 calls), 1.9x the baseline's speed'."""
    if not measured:
        return "not timed"
    text = f"p50 {units.ms(measured['p50_ms'])} ({measured['basis']})"
    plan = measured.get("plan") or {}
    if plan.get("speedup"):
        text += f"; the plan measured the candidate at {units.speedup(plan['speedup'])} the baseline's speed"
    elif measured.get("speedup"):
        text += f", {units.speedup(measured['speedup'])} the baseline's speed"
    return text


def _machine(hw: "HardwareProfile | None") -> dict[str, Any]:
    """The machine the candidate was measured on, as the manifest records it."""
    if hw is None:
        return {}
    cpu = hw.cpu
    return {"cpu": cpu.model, "vendor": cpu.vendor, "architecture": cpu.architecture,
            "isa_features": list(cpu.features), "physical_cores": cpu.physical_cores,
            "logical_cores": cpu.logical_cores, "usable_cores": cpu.usable_cores,
            "gpus": [{"name": g.name, "memory_bytes": g.memory_total_bytes,
                      "compute_capability": list(g.compute_capability) if g.compute_capability else None}
                     for g in hw.gpus],
            "driver_version": hw.driver_version, "cuda_version": hw.cuda_version,
            "os": hw.os, "python": hw.python_version}


def _machine_words(hw: "HardwareProfile | None") -> str:
    """'AMD EPYC (x86_64, 2 cores usable of 2; avx2, avx512f, ...)' and its GPU if any."""
    if hw is None:
        return "a machine the results do not describe"
    cpu = hw.cpu
    features = ", ".join(cpu.features[:12]) + (", ..." if len(cpu.features) > 12 else "")
    text = (f"{cpu.model} ({cpu.architecture}, {cpu.usable_cores} cores usable of {cpu.logical_cores}"
            + (f"; {features}" if features else "") + ")")
    if hw.gpus:
        text += " with " + ", ".join(g.name for g in hw.gpus)
    return text


def fidelity_words(fid: Any) -> str:
    """The recorded fidelity in words: the output kind's own test, else cosine and top-1 agreement."""
    from planner.results import fidelity_view

    if fid is None:
        return "not compared"
    if fid.reference:
        return "the original model itself"
    return ", ".join(fidelity_view.facts(fid))
