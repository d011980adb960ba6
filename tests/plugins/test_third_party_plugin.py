"""A third-party plugin installed as its own distribution: declarations alone put it in the plan.

The toy distribution is one module and an entry point in a temporary folder (a dist-info beside it,
as pip writes one). Nothing under planner/ names it: the decision tree offers it through the action
it declares, its own `expect` predicts it, a worker measures it, the ranking ranks it and the report
puts it in the phase it declares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from planner.plugins import catalog, discover

TOY_MODULE = '''
"""A toy plugin from another package: the model's own module, run in inference mode."""

from planner.plugins import ActionId, CandidateSpec, Phase, Plugin, Precision, Target


class ToyRuntime(Plugin):
    """Declares the graph-runtime action; runs the torch module as the baseline does."""

    name = "toy.runtime"
    target = Target.CPU
    summary = "toy runtime: the PyTorch module in inference mode"
    requires = ("torch",)
    needs_torch_module = True
    actions = (ActionId.GRAPH_RUNTIME,)
    runtime = "toy"
    phase = Phase.QUICK_WINS

    def candidates(self, ctx):
        yield CandidateSpec(plugin=self.name, label="toy runtime fp32", precision=Precision.FP32)

    def open(self, spec, model):
        from planner.pytorch.session import TorchSession

        return TorchSession(model.load().module, device="cpu")


class Malformed(Plugin):
    """Declares an action no tree knows and a phase the roadmap does not have."""

    name = "toy.malformed"
    actions = ("warp-drive",)
    phase = 7
'''


def _distribution(root: Path, name: str, module: str, source: str, entry_points: dict[str, str]) -> Path:
    """A folder holding one module and the dist-info that registers its entry points, as pip installs it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source)
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{ep} = {target}\n" for ep, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[planner.targets]\n{lines}")
    return root


@pytest.fixture
def toy_site(tmp_path: Path, monkeypatch) -> Path:
    """The toy distribution on this process's path and on the workers' (they find plugins the same way)."""
    site = _distribution(tmp_path / "site", "toy-planner-plugin", "toy_planner_plugin", TOY_MODULE,
                         {"toy.runtime": "toy_planner_plugin:ToyRuntime",
                          "toy.malformed": "toy_planner_plugin:Malformed"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", f"{site}:{Path.cwd()}")
    yield site
    sys.modules.pop("toy_planner_plugin", None)


def test_a_malformed_declaration_is_skipped_naming_the_field(toy_site: Path) -> None:
    plugins, issues = discover()
    assert "toy.runtime" in plugins and "toy.malformed" not in plugins
    reason = next(i.reason for i in issues if i.name == "toy.malformed")
    assert "field `actions`" in reason and "'warp-drive'" in reason and "field `phase`" in reason


def test_two_distributions_claiming_one_name_are_named(toy_site: Path, tmp_path: Path, monkeypatch) -> None:
    clash = _distribution(tmp_path / "clash", "other-plugin", "other_plugin", TOY_MODULE.replace(
        "class Malformed", "class _Unused"), {"toy.runtime": "other_plugin:ToyRuntime"})
    monkeypatch.syspath_prepend(str(clash))
    plugins, issues = discover()
    assert "toy.runtime" in plugins
    reason = next(i.reason for i in issues if i.name == "toy.runtime")
    assert "toy-planner-plugin 0.1" in reason and "other-plugin 0.1" in reason


@pytest.mark.slow
@pytest.mark.worker
def test_a_declared_plugin_is_planned_predicted_measured_ranked_and_reported(toy_site: Path, tmp_path: Path) -> None:
    from planner.pipeline import PlanOptions, run_plan

    assert "toy.runtime" in [d.name for d in catalog().declarations]
    out = tmp_path / "out"
    # The plan comes from the decision tree; only the toy is measured, to keep the test short.
    run_plan(PlanOptions(model="demo:tiny", target="cpu", quick=True, confirm=0, no_deploy=True, out=out,
                         plugins=("toy.runtime",)))
    results = json.loads((out / "results.json").read_text())
    step = next(s for s in results["plan"]["steps"] if s["title"] == "ONNX Runtime with all graph optimizations")
    assert step["plugins"] == ["cpu.onnxruntime", "toy.runtime"]

    toy = next(c for c in results["candidates"] if c["plugin"] == "toy.runtime")
    assert toy["prediction"]["low"] is not None and toy["prediction"]["basis"]
    assert toy["status"] == "ok" and toy["latency_ms"]["p50_ms"] > 0
    # A plugin that does not describe its candidates is titled by their label, with no snippet (Plugin.describe).
    assert toy["declared"] == {"phase": 1, "arithmetic": "none", "runtime": "toy", "transforms_model": False,
                               "is_baseline": False, "title": "toy runtime fp32", "apply": ""}
    index = results["candidates"].index(toy)
    assert index in results["ranking"]["order"]

    report = (out / "report.md").read_text() + (out / "evidence.md").read_text()
    phase1 = report.split("### Phase 1")[1].split("### Phase 2")[0]
    assert "toy runtime fp32" in phase1
    assert "measured by `cpu.onnxruntime`, `toy.runtime`" in report
