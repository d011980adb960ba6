"""Write the hand-over packages under deploy/: the winner and each roadmap phase's best candidate.

Which code writes a candidate's artifact and run.py is its plugin's (`Plugin.package`); this module picks
the candidates, adds what every package holds (sample inputs with the original's outputs, requirements.txt,
README.md, manifest.json) and records one `Deployment` per role. A candidate whose plugin has no exporter,
or whose export fails, is replaced by the next best that can be packaged, and the record says why; one
package failing never ends the plan.
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
from planner.deploy.runfile import readme_text, requirements_text, run_footer
from planner.deploy.samples import SAMPLES_NAME, write_samples
from planner.errors import PlannerError, runtime_error_line
from planner.results import CandidateResult, Deployment, PlanResults, from_data, to_data

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import Feed
    from planner.plugins import ModelRef, Plugin

DEPLOY_DIR = "deploy"
WINNER = "winner"
PHASES = {1: "quick wins", 2: "extra impact", 3: "architecture"}


@dataclass(frozen=True)
class Role:
    """Why a package is written: the plan's winner, or one roadmap phase's best; and the candidates in line."""

    name: str  # "winner", "phase 1", ...
    folder: str  # its folder under deploy/
    order: tuple[int, ...]  # candidate indices, best first: the first that can be packaged is

    @property
    def words(self) -> str:
        """The role as the README says it."""
        if self.name == WINNER:
            return "winner (its best ranked candidate)"
        phase = int(self.name.split()[-1])
        return f"best candidate of roadmap phase {phase} ({PHASES[phase]})"


class NotPackagedError(Exception):
    """Why one candidate has no package: no exporter, an export that failed, a plugin not installed."""


def roles(results: PlanResults) -> list[Role]:
    """The winner (every ranked candidate in order) and, for each roadmap phase, its ranked candidates in order."""
    order = results.ranking.order if results.ranking else ()
    found = [Role(WINNER, WINNER, tuple(order))]
    for phase, words in PHASES.items():
        members = tuple(i for i in order if _phase(results.candidates[i]) == phase)
        if members:
            found.append(Role(f"phase {phase}", f"phase-{phase}-{words.replace(' ', '-')}", members))
    return found


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
    for role in roles(results):
        record = _package_role(role, results, model=model, feeds=feeds, reference=reference, out_dir=out_dir,
                               find=find, written=written, failed=failed)
        if not record.folder:
            warn(f"no hand-over package for the {role.words}: {record.reason}")
        records.append(record)
    return tuple(records)


def _package_role(role: Role, results: PlanResults, *, model: "ModelRef", feeds: Sequence["Feed"],
                  reference: Sequence["np.ndarray"], out_dir: Path, find: Callable[[str], "Plugin"],
                  written: dict[int, tuple[str, str]], failed: dict[int, str]) -> Deployment:
    """The first candidate in the role's order that is (or can be) packaged, and why better ones were not."""
    if not role.order:
        return Deployment(role=role.name, label="", reason="no candidate passed the fidelity check, so none is ranked")
    best = results.candidates[role.order[0]]
    passed_over: list[str] = []
    for index in role.order:
        candidate = results.candidates[index]
        stands_in = ("; ".join(passed_over) and
                     f"stands in for {best.label}, the best ranked: " + "; ".join(passed_over))
        if index in written:
            folder, runtime = written[index]
            same = f"the same candidate as the {WINNER}, packaged once in {folder}"
            return Deployment(role=role.name, label=candidate.label, candidate=index, folder=folder, runtime=runtime,
                              reason="; ".join(p for p in (same, stands_in) if p))
        if index not in failed:
            dest = out_dir / DEPLOY_DIR / role.folder
            try:
                runtime = write_package(candidate, role=role, model=model, feeds=feeds, reference=reference,
                                        dest=dest, hardware=results.hardware, find=find)
            except NotPackagedError as exc:
                failed[index] = str(exc)
                shutil.rmtree(dest, ignore_errors=True)
            else:
                written[index] = (dest.relative_to(out_dir).as_posix(), runtime)
                return Deployment(role=role.name, label=candidate.label, candidate=index, folder=written[index][0],
                                  runtime=runtime, reason=stands_in)
        passed_over.append(f"{candidate.label} could not be packaged ({failed[index]})")
    return Deployment(role=role.name, label=best.label, candidate=role.order[0],
                      reason="no candidate in line could be packaged: " + "; ".join(passed_over))


def write_package(candidate: CandidateResult, *, role: Role, model: "ModelRef", feeds: Sequence["Feed"],
                  reference: Sequence["np.ndarray"], dest: Path, hardware: "HardwareProfile | None",
                  find: Callable[[str], "Plugin"]) -> str:
    """Write one package into `dest` (made afresh); the runtime its run.py uses. NotPackagedError says why not."""
    from planner.plugins import CandidateSpec

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
    measured, machine = _measured_words(candidate), _machine_words(hardware)
    (dest / "README.md").write_text(readme_text(
        label=candidate.label, role=role.words, runtime=files.runtime, measured=measured, machine=machine,
        fidelity=fidelity_words(candidate.fidelity), inputs=model.inputs.names, notes=files.notes), encoding="utf-8")
    names = [*files.files, "run.py", SAMPLES_NAME, "requirements.txt", "README.md"]
    write_manifest(dest, {
        "format": FORMAT,
        "role": role.name,
        "candidate": {"label": candidate.label, "plugin": candidate.plugin, "precision": candidate.precision,
                      "spec": candidate.spec, "reproduce": candidate.reproduce},
        "runtime": files.runtime,
        "settings": files.settings,
        "measured": _measured(candidate),
        "fidelity": to_data(candidate.fidelity) if candidate.fidelity is not None else None,
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
    return files.runtime


def _measured(candidate: CandidateResult) -> dict[str, Any]:
    """The latency figures verify compares with, and the 95% interval of the median where it is known."""
    lat = candidate.latency_ms
    if lat is None:
        return {}
    # None: too few samples to bound the median (a quick screen of a slow model).
    bounded = math.isfinite(lat.ci95_rel) and lat.ci95_rel > 0
    return {"p50_ms": lat.p50_ms, "p95_ms": lat.p95_ms, "samples": lat.samples, "speedup": candidate.speedup,
            "p50_ci95_ms": [lat.p50_ms * (1 - lat.ci95_rel), lat.p50_ms * (1 + lat.ci95_rel)] if bounded else None}


def _measured_words(candidate: CandidateResult) -> str:
    """'p50 0.21 ms (95% interval 0.20-0.22 ms), 1.9x the baseline'."""
    lat = candidate.latency_ms
    if lat is None:
        return "not timed"
    text = f"p50 {units.ms(lat.p50_ms)}"
    if math.isfinite(lat.ci95_rel) and lat.ci95_rel > 0:
        text += f" (95% interval of the median ±{lat.ci95_rel:.1%})"
    if candidate.speedup:
        text += f", {units.speedup(candidate.speedup)} the baseline"
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
