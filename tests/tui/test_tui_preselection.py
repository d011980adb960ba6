"""The Optimize step preselects what the README's rule says and says why: defaults you never stated do not cut the
search (the runtime switches and post-training INT8 are measured); a speed target you state and the baseline meets
leaves only the quick checks; retraining waits until a requirement you state is missed (issue 38)."""

from __future__ import annotations

from textual.widgets import Input, Label
from tui_support import PlannerApp, RecordedSession, drive, run_app, wait_for, wait_idle

from planner.plugins.declarations import Arithmetic
from planner.tui.widgets.toggles import TickList


def test_optimize_preselects_int8_only_while_no_speed_target_you_stated_is_met(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "optimize")
        session = app.session
        catalog = session.catalog()
        plugins = app.query_one(TickList)

        def preselected() -> dict[str, Arithmetic]:
            found = {name: catalog.get(name) for name in plugins.selected}
            return {name: d.arithmetic for name, d in found.items() if d is not None}

        def intro() -> str:
            return str(app.query_one("#optimize #why", Label).render())

        plan = session.plan
        assert plan is not None and plan.requirements_met is True and plan.requirements is not None
        assert not plan.requirements.stated
        chosen = preselected()
        assert set(chosen) == set(plugins.selected) and set(chosen) <= set(session.planned_plugins())
        # Post-training INT8 is measured, guarded by the fidelity check; nothing that needs retraining is.
        assert Arithmetic.REDUCED_PRECISION in chosen.values()
        assert set(chosen.values()) <= {Arithmetic.NONE, Arithmetic.REDUCED_PRECISION}
        assert "Defaults met, none stated by you" in intro()
        assert "retraining waits for a requirement you state" in intro()

        # A latency target you state, which the baseline meets: only the quick checks, no lower precision.
        await pilot.press("3")
        app.query_one("#req-latency_ms", Input).value = "1000"
        await pilot.pause()
        await wait_idle(pilot)
        assert session.plan is not None and session.plan.requirements_met is True
        await pilot.press("7")
        await wait_for(pilot, lambda: "only the quick checks" in intro(), 30, "the new plan's plugin list")
        await wait_idle(pilot)
        chosen = preselected()
        assert chosen and set(chosen.values()) == {Arithmetic.NONE}

    run_app(app, body, size=(100, 30))
