"""The sidebar and panes follow the session's step graph: what a change makes out of date is the
engine's answer (planner/pipeline/steps.py), never the TUI's own."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Input, Label, Select, Static
from tui_support import PlannerApp, RecordedSession, TwoModels, drive, run_app, screen_text, wait_for, wait_idle

from planner.pipeline.steps import Step
from planner.results.audit import MeasurementAudit
from planner.tui import formatting as fmt
from planner.tui.screens.confirm import ConfirmDiscard
from planner.tui.screens.optimize import plugin_prompt
from planner.tui.steps import STEPS
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.step_list import StepList
from planner.tui.widgets.toggles import TickList

LATER = {"optimize", "results", "report"}


def test_a_new_target_after_optimizing_makes_optimize_and_report_stale_but_keeps_the_baseline(tmp_path):
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "report")
        steps = app.main.query_one(StepList)
        assert {"optimize", "report"} <= steps.done
        baseline, measured = session.baseline, len(session.results.candidates)
        await pilot.press("3")
        app.query_one("#target", Select).value = "edge"
        await pilot.pause(0.3)
        await wait_idle(pilot)
        # Re-planned for the new target from the same baseline; the measured candidates stay, to be redone.
        assert session.target == "edge" and session.plan is not None and session.plan.target == "edge"
        assert session.baseline is baseline and len(session.results.candidates) == measured
        assert session.stale_steps() == {Step.OPTIMIZE, Step.REPORT}
        assert {"profile", "checklist", "tree"} <= steps.done and not LATER & steps.done
        assert "changed since the last save" in str(app.query_one("#report #saved", Label).render())
        # Optimizing again replaces the candidates (not added to the old ones) and is done again.
        await pilot.press("7")
        plugins = app.query_one(TickList)
        await wait_for(pilot, lambda: plugins.option_count > 0, 30, "the plugin list")
        await wait_idle(pilot)
        plugins.deselect_all()
        plugins.select("cpu.onnxruntime")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.optimized, 30, "the optimize run")
        await wait_idle(pilot)
        assert len(session.results.candidates) == measured
        assert "optimize" in steps.done and "report" not in steps.done

    run_app(app, body)


async def every_step(pilot) -> dict[str, str]:
    """Each step's screen, by step id."""
    shown = {}
    for step in STEPS:
        await pilot.press(str(step.number))
        await pilot.pause()
        shown[step.id] = screen_text(pilot.app)
    return shown


def test_another_model_clears_everything_measured_for_the_last_one(tmp_path):
    session = TwoModels()
    baseline = session.recorded.baseline
    assert baseline is not None
    # Taken under interference, so the Profile step shows its banner.
    busy = MeasurementAudit(issues=("other processes used 1.2 cores: re-run on an idle machine",))
    session.recorded = replace(session.recorded, baseline=replace(baseline, audit=busy))
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "report")
        assert session.replies and session.results.candidates
        lat = baseline.latency_ms
        previous = {"profile": f"baseline p50 {fmt.ms(lat.p50_ms)} over {lat.samples} samples",
                    "banner": "taken under interference", "optimize": "candidates measured",
                    "tree": "tree · ✓ visited", "checklist": "planned with", "report": "Saved",
                    "results": "sorted by rank"}
        before = await every_step(pilot)
        # Each is on screen before the switch, so the test sees it go.
        assert {k for k, v in previous.items() if not any(v in text for text in before.values())} == set()
        await pilot.press("2")
        app.query_one("#source", Input).value = "demo:other"
        await pilot.press("r")
        # The report is saved, so the question says where it stays; y loads the other model.
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question before discarding")
        assert "stay in" in " ".join(str(w.render()) for w in app.screen.query(Static))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.model is not None and session.model.name == "other", 30, "the load")
        await wait_idle(pilot)
        done = app.main.query_one(StepList).done
        assert {"hardware", "model"} <= done
        assert not {"profile", "checklist", "tree", "optimize", "results", "report"} & done
        assert session.baseline is None and session.plan is None and session.replies == {}
        assert session.results.candidates == () and not session.stale_steps()
        assert app.query_one(TickList).option_count == 0
        assert "Run the Profile step (4) first" in str(app.query_one("#checklist #intro", Label).render())
        # Issue 38: no step shows what was measured, planned or saved for demo:tiny, and each says what has not
        # run for demo:other.
        after = await every_step(pilot)
        assert {(step, k) for step, text in after.items() for k, v in previous.items() if v in text} == set()
        assert not any("demo:tiny" in text for text in after.values())
        assert not app.query_one("#profile #notice", Notice).display
        assert "not measured yet for demo:other: press r" in after["profile"]
        assert "not run yet for demo:other" in after["optimize"]
        assert "Nothing to save yet for demo:other: profile it first (step 4)" in after["report"]
        await pilot.press("s")  # s answers as the Report step says
        await wait_for(pilot, lambda: any("Nothing to save yet" in str(n.message) for n in app._notifications), 10,
                       "the answer to s")

    run_app(app, body, size=(100, 30))


def test_the_session_marks_the_baseline_plugin_not_its_name():
    row = {"plugin": "any.runtime", "target": "any", "summary": "", "reasons": [], "planned": True}
    assert "the baseline, measured in step 4" in plugin_prompt({**row, "baseline": True}).plain
    assert plugin_prompt(row).plain.endswith("planned")


def test_the_baseline_row_cannot_be_ticked(tmp_path):
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "optimize")
        plugins = app.query_one(TickList)
        baseline = plugins.get_option_at_index(
            next(i for i in range(plugins.option_count) if plugins.get_option_at_index(i).value == "torch.eager"))
        assert baseline.disabled and "the baseline" in str(baseline.prompt)
        assert "torch.eager" not in plugins.selected

    run_app(app, body)


def test_a_plugin_is_listed_by_its_title_and_only_one_that_cannot_run_names_its_device():
    planned = {"plugin": "edge.int8", "title": "ONNX Runtime INT8", "target": "edge", "summary": "", "reasons": [],
               "planned": True}
    # An edge plugin planned for this CPU runs on it: no "(edge)" beside "planned".
    assert plugin_prompt(planned).plain == "ONNX Runtime INT8 — planned"
    gpu = {**planned, "plugin": "nvidia.tensorrt", "title": "TensorRT", "target": "nvidia", "planned": False,
           "reasons": ["no GPU"]}
    assert plugin_prompt(gpu).plain == "TensorRT (NVIDIA GPU) — unavailable: no GPU"
