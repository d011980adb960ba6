"""The Results step's `r`: write the hand-over packages and verify them off the UI thread, and show each one."""

from __future__ import annotations

import dataclasses

import pytest
from textual.widgets import Static
from tui_support import PlannerApp, RecordedSession, drive, run_app, wait_for, wait_idle


class DeployingSession(RecordedSession):
    """The recorded run, whose deploy() packages demo:tiny's real ONNX export as the winner (ONNX Runtime)."""

    def __init__(self, onnx, **kwargs) -> None:
        super().__init__(**kwargs)
        self.onnx = onnx

    def deploy(self):
        from planner.deploy import write_deployments
        from planner.measure.evaluate import fidelity_inputs
        from planner.models import load_model
        from planner.plugins import CandidateSpec, ModelRef
        from planner.pytorch.session import TorchSession
        from planner.results import PlanResults, Ranking, to_data

        tiny = load_model("demo:tiny")
        feeds = fidelity_inputs(tiny.inputs, count=2)
        torch_session = TorchSession(tiny.module)
        reference = [torch_session.to_numpy(torch_session.run(torch_session.prepare(f))) for f in feeds]
        spec = CandidateSpec(plugin="cpu.onnxruntime", label="onnxruntime defaults", config={"defaults": True},
                             artifacts={"onnx": str(self.onnx)})
        best = self.results.best
        assert best is not None and best.latency_ms is not None
        winner = dataclasses.replace(best, plugin=spec.plugin, label=spec.label, spec=to_data(spec), declared=None)
        results = PlanResults(candidates=(winner,), ranking=Ranking(order=(0,)), hardware=self.results.hardware)
        assert self.out_dir is not None
        records = write_deployments(results, model=ModelRef.of(tiny), feeds=feeds, reference=reference,
                                    out_dir=self.out_dir)
        self.update(deployments=records)
        return records


@pytest.mark.worker
def test_r_on_results_writes_and_verifies_the_packages(tmp_path, monkeypatch, tiny):
    from planner.onnx.export import export_onnx

    monkeypatch.chdir(tmp_path)
    onnx = export_onnx(tiny, tmp_path / "tiny.onnx").path
    session = DeployingSession(onnx)
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        await pilot.press("r")
        status = app.query_one("#deploy-status", Static)
        await wait_for(pilot, lambda: "verified" in str(status.render()), 120, "the packages' verification")
        await wait_idle(pilot)
        shown = str(status.render())
        assert "1 of 1 verified" in shown or "0 of 1 verified" in shown  # the latency check depends on the load
        assert "winner: onnxruntime defaults → deploy/winner" in shown
        assert "files pass · runtime pass · fidelity pass · latency" in shown
        assert (tmp_path / "out" / "deploy" / "winner" / "manifest.json").is_file()

    run_app(app, body, size=(100, 40))


def test_r_before_anything_is_ranked_says_what_to_do_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "model")
        await pilot.press("8", "r")
        await pilot.pause(0.2)
        assert any("run the Optimize step" in str(n.message) for n in app._notifications)
        assert not app.query_one("#deploy-status", Static).display

    run_app(app, body)
