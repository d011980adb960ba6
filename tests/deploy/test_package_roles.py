"""Which candidates get a package (`packaged_roles`), what a record says when a faster step has none, and what a
manifest records: paths relative to the plan's folder, and a p50 from the full method with its sample count."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from deploy_support import ranked, stated_result

from planner.deploy import write_deployments
from planner.deploy.check import plan_note
from planner.deploy.package import UNCONFIRMED_WORDS, packaged_roles
from planner.plugins import ModelRef, Plugin, get_plugin
from planner.plugins.packaging import PackagingError
from planner.results import Declared, Status


class BrokenExporter(Plugin):
    """A runtime whose exporter fails."""

    name = "test.broken_exporter"

    def package(self, spec, model, dest):
        """Fail the way a real exporter might."""
        raise PackagingError("the model's graph cannot be captured", "deploy another candidate")


def _lookup(name: str) -> Plugin:
    return BrokenExporter() if name == BrokenExporter.name else get_plugin(name)


def _unconfirmed(spec, *, p50_ms: float, phase: int, plugin: str | None = None, arithmetic: str = "none"):
    """A candidate the fidelity check could not establish (or, `arithmetic` structural, a redesign): not ranked."""
    result = stated_result(dataclasses.replace(spec, plugin=plugin or spec.plugin, label=f"{plugin or 'ort'} fast"),
                           p50_ms=p50_ms, phase=phase)
    status = Status.REJECTED if arithmetic == "structural" else Status.UNCONFIRMED
    return dataclasses.replace(result, status=status, speedup=5.0, reason="needs retraining: speed measured, "
                               "accuracy not" if status is Status.REJECTED else "not established: the samples "
                               "cannot tell",
                               declared=Declared(phase=phase, runtime="test", arithmetic=arithmetic))


def test_a_faster_step_the_check_could_not_establish_gets_the_phase_package(tmp_path, tiny, ort_spec, samples):
    winner = stated_result(ort_spec, p50_ms=0.02, phase=1)
    pending = _unconfirmed(ort_spec, p50_ms=0.01, phase=2)
    results = dataclasses.replace(ranked(winner, pending), ranking=dataclasses.replace(ranked(winner).ranking))
    roles = packaged_roles(results)
    assert [(r.name, r.order) for r in roles] == [("winner", (0,)), ("phase 1", (0,)), ("phase 2", (1,))]
    deployments = write_deployments(results, model=ModelRef.of(tiny), feeds=samples[0], reference=samples[1],
                                    out_dir=tmp_path)
    phase_two = deployments[2]
    assert (phase_two.candidate, phase_two.folder) == (1, "deploy/phase-2-extra-impact")
    assert phase_two.reason == UNCONFIRMED_WORDS
    # Its check will say that a pass on a few samples does not establish it either.
    rule = json.loads((tmp_path / phase_two.folder / "manifest.json").read_text())["fidelity_rule"]
    assert plan_note(rule).startswith("the plan could not establish this candidate's fidelity (the samples cannot "
                                      "tell); these few samples cannot either")


def test_a_faster_step_that_cannot_be_packaged_says_why(tmp_path, tiny, ort_spec, samples):
    winner = stated_result(ort_spec, p50_ms=0.02, phase=1)
    broken = _unconfirmed(ort_spec, p50_ms=0.01, phase=2, plugin=BrokenExporter.name)
    redesign = _unconfirmed(ort_spec, p50_ms=0.005, phase=3, arithmetic="structural")
    results = dataclasses.replace(ranked(winner, broken, redesign), ranking=ranked(winner).ranking)
    deployments = write_deployments(results, model=ModelRef.of(tiny), feeds=samples[0], reference=samples[1],
                                    out_dir=tmp_path, find_plugin=_lookup)
    by_role = {d.role: d for d in deployments}
    assert by_role["phase 2"].folder == "" and by_role["phase 2"].candidate == 1
    assert "test.broken_exporter fast could not be packaged (the model's graph cannot be captured)" in \
        by_role["phase 2"].reason
    assert by_role["phase 3"].folder == "" and by_role["phase 3"].reason == (
        "ort fast, 5x the baseline, cannot be packaged (needs retraining: speed measured, accuracy not)")


def _strings(value) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_manifest_and_readme_name_no_absolute_path(tmp_path, tiny, tiny_onnx, ort_spec, samples):
    plan = tmp_path / "plan"
    artifact = plan / "artifacts" / "onnx" / "tiny.onnx"
    artifact.parent.mkdir(parents=True)
    shutil.copyfile(tiny_onnx, artifact)
    spec = dataclasses.replace(ort_spec, artifacts={"onnx": str(artifact)})
    write_deployments(ranked(stated_result(spec, p50_ms=0.02)), model=ModelRef.of(tiny), feeds=samples[0],
                      reference=samples[1], out_dir=plan)
    folder = plan / "deploy" / "winner"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["candidate"]["spec"]["artifacts"] == {"onnx": "artifacts/onnx/tiny.onnx"}
    assert '"onnx":"artifacts/onnx/tiny.onnx"' in manifest["candidate"]["reproduce"]
    for text in (*_strings(manifest), (folder / "README.md").read_text()):
        assert "/tmp" not in text and str(tmp_path) not in text
        assert not Path(text).is_absolute(), text


@pytest.mark.worker
@pytest.mark.parametrize(("quick", "calls", "why"), [
    (True, 100, "because the plan's figure is its quick screen's"),
    (False, 6, "because the plan's figure rests on 6 calls, fewer than the 10 its full method takes")])
def test_a_screened_p50_is_confirmed_by_timing_the_package_before_it_is_recorded(tmp_path, tiny, ort_spec, samples,
                                                                                 quick, calls, why):
    screened = stated_result(ort_spec, p50_ms=12.5)  # a made-up figure, far from what the package times
    assert screened.latency_ms is not None
    screened = dataclasses.replace(screened, latency_ms=dataclasses.replace(screened.latency_ms, samples=calls))
    results = dataclasses.replace(ranked(screened), quick=quick)
    records = write_deployments(results, model=ModelRef.of(tiny), feeds=samples[0], reference=samples[1],
                                out_dir=tmp_path)
    measured = json.loads((tmp_path / "deploy" / "winner" / "manifest.json").read_text())["measured"]
    assert measured["p50_ms"] < 12.5 / 10 and measured["samples"] >= 10
    # The record the report reads carries the package's own figure and why it was taken.
    winner = next(d for d in records if d.role == "winner")
    assert winner.package_p50_ms == measured["p50_ms"] and why.removeprefix("because ") in winner.package_basis
    assert measured["basis"].startswith("this package timed by the plan's full method when it was written, over ")
    assert why in measured["basis"]
    method = "quick screen" if quick else "full method"
    assert measured["plan"] == {"p50_ms": 12.5, "samples": calls, "speedup": None, "method": method}
    readme = (tmp_path / "deploy" / "winner" / "README.md").read_text()
    assert f"the plan's {method} read 12.5 ms over {calls} calls" in readme
