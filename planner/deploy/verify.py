"""`planner verify`: check a hand-over package where it was copied to.

First the files against manifest.json (a missing, edited or foreign file is named) and the runtime (a module
run.py imports that is not installed gives the install command). Then run.py runs in a fresh process:
its outputs on the sample inputs are judged against the original model's by the manifest's fidelity rule
(planner.deploy.check: the code and the numbers `python run.py --check` judges by), and its `run` is timed by
the plan's method (`time_callable` with `MeasureSettings.default()`) and compared with the recorded p50.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.deploy.check import PASS, judge_package_outputs, latency_verdict, plan_note
from planner.deploy.manifest import MANIFEST_NAME, file_problems, read_manifest
from planner.deploy.rule import LATENCY_TOLERANCE, fidelity_rule
from planner.deploy.samples import SAMPLES_NAME, read_samples
from planner.errors import PlannerError
from planner.results.values import LatencyStats

FILES, RUNTIME, FIDELITY, LATENCY = "files", "runtime", "fidelity", "latency"
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")


@dataclass(frozen=True)
class Check:
    """One check on a package: what it checked, whether it passed, and what it found, in words."""

    name: str  # files, runtime, fidelity or latency
    passed: bool
    detail: str


@dataclass(frozen=True)
class PackageVerdict:
    """Every check on one package, with the figures behind the fidelity and latency checks."""

    folder: Path
    label: str
    runtime: str
    checks: tuple[Check, ...] = ()
    fidelity: dict[str, Any] | None = None  # the figures the fidelity check measured (cosine, top-1 agreement, ...)
    p50_ms: float | None = None  # measured here
    recorded_p50_ms: float | None = None  # measured by the plan
    problems: tuple[str, ...] = ()  # the files check's findings, one per file

    @property
    def passed(self) -> bool:
        """Whether every check passed (and the fidelity and latency checks ran)."""
        names = {c.name for c in self.checks}
        return all(c.passed for c in self.checks) and {FIDELITY, LATENCY} <= names

    def data(self) -> dict[str, Any]:
        """The verdict as JSON-ready data (`planner verify --json`)."""
        return {"folder": str(self.folder), "label": self.label, "runtime": self.runtime, "passed": self.passed,
                "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks],
                "problems": list(self.problems), "p50_ms": self.p50_ms, "recorded_p50_ms": self.recorded_p50_ms,
                "fidelity": self.fidelity}

    def check(self, name: str) -> Check | None:
        """The named check, or None when it did not run."""
        return next((c for c in self.checks if c.name == name), None)


def package_folders(path: Path) -> list[Path]:
    """The package folders `path` names: itself when it holds manifest.json, else each sub-folder that does."""
    path = Path(path)
    if not path.exists():
        raise PlannerError(f"{path} does not exist", "pass the plan's deploy/ folder or one package folder in it")
    if (path / MANIFEST_NAME).is_file():
        return [path]
    # The winner first, then the phases in order.
    found = sorted((p.parent for p in path.glob(f"*/{MANIFEST_NAME}")), key=lambda p: (p.name != "winner", p.name))
    if not found:
        raise PlannerError(f"{path} holds no hand-over package (no folder in it has a {MANIFEST_NAME})",
                           "pass the deploy/ folder a plan wrote, or one package folder in it")
    return found


def verify_path(path: Path, *, tolerance: float = LATENCY_TOLERANCE,
                timeout_s: float = 300.0) -> list[PackageVerdict]:
    """Verify every package `path` names (a deploy/ folder or one package), each on its own."""
    return [verify_package(folder, tolerance=tolerance, timeout_s=timeout_s) for folder in package_folders(path)]


def verify_package(folder: Path, *, tolerance: float = LATENCY_TOLERANCE,
                   timeout_s: float = 300.0) -> PackageVerdict:
    """The files, the runtime, then fidelity and latency from run.py in a fresh process."""
    from planner.measure import WorkerStatus, run_isolated

    manifest = read_manifest(folder)
    candidate = manifest.get("candidate") or {}
    verdict = PackageVerdict(folder=folder, label=str(candidate.get("label", folder.name)),
                             runtime=str(manifest.get("runtime", "")),
                             recorded_p50_ms=(manifest.get("measured") or {}).get("p50_ms"))
    problems = file_problems(folder, manifest["files"])
    listed = len(manifest["files"])
    files = Check(FILES, not problems, "; ".join(problems) if problems else
                  f"all {listed} files match the SHA-256 in {MANIFEST_NAME}")
    verdict = _with(verdict, files, problems=tuple(problems))
    if problems:
        return verdict
    missing = [m for m in manifest.get("imports", []) if importlib.util.find_spec(m) is None]
    if missing:
        return _with(verdict, Check(RUNTIME, False, _install_words(missing, folder)))
    verdict = _with(verdict, Check(RUNTIME, True, "installed: " + ", ".join(manifest.get("imports", []))))
    outcome = run_isolated(measure_package, str(folder), timeout_s=timeout_s)
    if outcome.status is not WorkerStatus.OK:
        module = _MISSING_MODULE.search(outcome.reason)
        if module:
            return _with(verdict, Check(RUNTIME, False, _install_words([module.group(1)], folder)))
        reason = f"run.py did not run: {outcome.reason.splitlines()[0] if outcome.reason else outcome.status}"
        return _with(verdict, Check(FIDELITY, False, reason), Check(LATENCY, False, reason))
    value = outcome.value
    _, reference = read_samples(folder / SAMPLES_NAME)
    fidelity, fid = _fidelity_check(manifest, reference, value["outputs"])
    latency = _latency_check(value["stats"], verdict.recorded_p50_ms, tolerance)
    return _with(verdict, fidelity, latency, fidelity=fid, p50_ms=value["stats"].p50_ms)


def _with(verdict: PackageVerdict, *checks: Check, **changes: Any) -> PackageVerdict:
    """The verdict with more checks (and any figures in `changes`)."""
    import dataclasses

    return dataclasses.replace(verdict, checks=(*verdict.checks, *checks), **changes)


def _install_words(modules: list[str], folder: Path) -> str:
    """Which modules run.py needs that are not installed, and the command that installs the measured versions."""
    return (f"{', '.join(modules)} not installed here: run.py needs it; install the versions measured with "
            f"pip install -r {folder.resolve() / 'requirements.txt'}")


def _fidelity_check(manifest: dict, reference: list, outputs: list) -> tuple[Check, dict[str, Any]]:
    """The outputs here against the original's, by the manifest's rule (a manifest written before it recorded one:
    the plan's gate at the candidate's precision)."""
    rule = manifest.get("fidelity_rule")
    if not rule:
        recorded = manifest.get("fidelity") or {}
        rule = fidelity_rule(str((manifest.get("candidate") or {}).get("precision", "fp32")),
                             output_kind=str(recorded.get("output_kind") or ""))
    verdict, words, figures = judge_package_outputs(reference, outputs, rule)
    detail = f"{words}, on the {len(outputs)} sample inputs against the original model's outputs"
    if plan_note(rule):
        detail += f"; {plan_note(rule)}"
    return Check(FIDELITY, verdict == PASS, detail if verdict == PASS else f"{verdict}: {detail}"), figures


def _latency_check(stats: LatencyStats, recorded: float | None, tolerance: float) -> Check:
    """The p50 here against the plan's, within `tolerance` (10%: the plan's own reproduce rule)."""
    verdict, words = latency_verdict(stats.p50_ms, recorded, tolerance, stats.samples)
    return Check(LATENCY, verdict == PASS, words)


def measure_package(folder: str) -> dict[str, Any]:
    """In a fresh process: import the package's run.py by its path, run the samples, time `run` as the plan did."""
    from planner.measure import MeasureSettings, time_callable

    sys.dont_write_bytecode = True  # no __pycache__ in the package: it would be a file the manifest does not list
    path = Path(folder)
    spec = importlib.util.spec_from_file_location("deployed_run", path / "run.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path / 'run.py'}")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    session = runner.load(path)
    feeds, _ = read_samples(path / SAMPLES_NAME)
    prepared = [runner.prepare(session, feed) for feed in feeds]
    outputs = [runner.first_output(runner.run(session, p)) for p in prepared]
    sync = getattr(runner, "sync", None)
    timing = time_callable(lambda p: runner.run(session, p), prepared, settings=MeasureSettings.default(),
                           sync=(lambda: sync(session)) if sync is not None else None)
    return {"outputs": outputs, "stats": timing.stats}
