"""The whole flow on the real engine with demo:tiny, step by step, in an 80×24 terminal."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, Label, OptionList, Select, Static
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text, wait_for, wait_idle

from planner.advice import defaults_for
from planner.tui.screens.report import ReportPreview
from planner.tui.screens.requirements import number_text
from planner.tui.screens.tree import TreePane
from planner.tui.widgets.toggles import TickList

pytestmark = pytest.mark.slow


def _column(table: DataTable, index: int) -> list[str]:
    return [str(table.get_row_at(i)[index]).strip() for i in range(table.row_count)]


@pytest.mark.worker  # the real engine: the profile and the optimize run measure in worker processes
def test_whole_flow_on_demo_tiny(tmp_path):
    out = tmp_path / "out"
    app = PlannerApp(model="demo:tiny", out_dir=out)

    async def body(pilot):
        session = app.session
        # Start-up detects the hardware, measures the ceilings and loads the model, one after another.
        await wait_for(pilot, lambda: session.model is not None, 180, "the start-up load")
        await wait_idle(pilot)
        assert app.current == "hardware"
        text = screen_text(app)
        assert session.hw.cpu.model in text
        assert "Device class" in text and session.ceilings is not None

        await pilot.press("2")
        assert "1,578" in screen_text(app)  # demo:tiny's parameter count, from LoadedModel.describe()

        await pilot.press("3")
        default = defaults_for(session.hw.device_class)
        latency = app.query_one("#req-latency_ms", Input).value
        assert latency == number_text(default.latency_ms)
        assert f"Latency (ms)   {latency}" in screen_text(app)

        await pilot.press("4", "r")
        await wait_for(pilot, lambda: session.baseline is not None, 300, "the baseline")
        await wait_idle(pilot)
        assert "conv1" in _column(app.query_one("#layers", DataTable), 0)
        assert "baseline p50" in screen_text(app)

        await pilot.press("5")
        evidence = [str(w.render()) for w in app.query("#items Static")]
        assert any("evidence: " + session.answers[0].evidence[:20] in e for e in evidence)
        open_items = [a for a in session.answers if str(a.status) == "ask-user"]
        for select in app.query("#items Select").results(Select):
            select.value = "the model itself" if "the model itself" in str(select.prompt) else "no"
        await pilot.press("r")
        await pilot.pause(0.2)
        assert app.current == "tree"
        assert {a.id: a.status for a in session.answers if a.id in {o.id for o in open_items}} == {
            o.id: "user" for o in open_items}

        tree = app.query_one(TreePane).query_one(OptionList)
        # Each node's first line, after the tree's guides: ✓ where the walk visited it.
        firsts = [tree.get_option_at_index(i).prompt.plain.split("\n")[0].lstrip("│├└─ ")
                  for i in range(tree.option_count)]
        assert sum(1 for line in firsts if line.startswith("✓")) == len(session.path.visited)
        tree.focus()
        await pilot.press("down")
        assert "result:" in str(app.query_one("#node-detail", Static).render())
        assert "Plan" in str(app.query_one("#plan", Static).render())

        await pilot.press("escape", "7")
        plugins = app.query_one(TickList)
        await wait_for(pilot, lambda: plugins.option_count > 0, 60, "the plugin list")
        assert plugins.selected, "the planned plugins are preselected"
        plugins.deselect_all()
        plugins.select("cpu.onnxruntime")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.optimized, 300, "the optimize run")
        await wait_idle(pilot)

        await pilot.press("8")
        table = app.query_one("#candidates", DataTable)
        count = len(session.results.candidates)
        assert count > 1 and table.row_count == count
        # The report's order first; o sorts by the next column on screen.
        assert "sorted by rank (p50 latency)" in str(app.query_one("#sorted", Label).render())
        await pilot.press("o")
        assert "sorted by p50" in str(app.query_one("#sorted", Label).render())

        await pilot.press("9", "s")
        await wait_idle(pilot)
        report = app.query_one("#report-md", ReportPreview)
        await wait_for(pilot, lambda: "Summary" in (report.source or ""), 30, "the report preview")
        assert str(out / "report.md") in str(app.query_one("#saved", Label).render())
        assert (out / "report.md").exists() and (out / "results.json").exists()
        assert "✓ 9 Report" in screen_text(app)

    run_app(app, body)


@pytest.mark.parametrize(("step", "where", "shown", "once", "not_shown"), [
    # The first screen says what the tool does and what to press; on a CPU-only machine the missing GPU is
    # said once, calmly, not as an error.
    pytest.param("hardware", None,
                 ("tries faster ways to run it", "The demo model demo:tiny is loaded", "Press 4 then r",
                  "no NVIDIA GPU on this machine"),
                 ("NVIDIA GPU",), ("NVMLError",), id="first-screen-says-what-the-tool-does-and-what-to-press"),
    pytest.param("optimize", "#optimize #intro", ("quick mode, as the profile in step 4",), (), (),
                 id="optimize-says-which-mode-it-runs-in"),
])
def test_a_step_says_what_it_does(step, where, shown, once, not_shown, tmp_path, monkeypatch):
    """At 120x40, the words on the step's screen (or in the widget `where`) after a recorded run reaches it."""
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, step)
        text = screen_text(app) if where is None else str(app.query_one(where, Label).render())
        assert [s for s in shown if s not in text] == []
        assert {s: text.count(s) for s in once} == {s: 1 for s in once}
        assert [s for s in not_shown if s in text] == []

    run_app(app, body, size=(120, 40))
