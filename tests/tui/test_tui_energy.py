"""The Results step's energy: a narrow J/inference column where the screen has room, and in every candidate's
details always (at 80x24 the column gives way to the candidate names; the details say the figure or why not)."""

from __future__ import annotations

import dataclasses

from textual.widgets import DataTable, Static
from tui_support import PlannerApp, RecordedSession, drive, run_app, typed_candidate

from planner.results.energy_values import EnergyStatus, InferenceEnergy
from planner.tui.screens.results import candidate_detail, visible_columns

WHY = "no CPU energy counter: no /sys/class/powercap (the kernel exposes no RAPL here)"


def _with_energy(session: RecordedSession) -> None:
    cands = list(session.recorded.candidates)
    cands[0] = dataclasses.replace(cands[0], energy=InferenceEnergy(EnergyStatus.MEASURED, joules=0.0427,
                                                                    scope="CPU package", gross_j=9.0, idle_j=4.6,
                                                                    window_s=0.4, calls=128))
    cands[1:] = [dataclasses.replace(c, energy=InferenceEnergy(EnergyStatus.UNAVAILABLE, reason=WHY))
                 for c in cands[1:]]
    session.recorded = dataclasses.replace(session.recorded, candidates=tuple(cands))


def test_details_say_the_figure_or_why_there_is_none() -> None:
    measured = {"latency_ms": {"p50_ms": 1.0}, "energy": {"status": "measured", "joules": 0.0427,
                                                          "scope": "CPU package", "calls": 128}}
    assert "energy: 42.7 mJ per inference (CPU package" in candidate_detail(typed_candidate(measured), 1).plain
    missing = {"latency_ms": {"p50_ms": 1.0}, "energy": {"status": "unavailable", "reason": WHY}}
    assert f"energy: unavailable: {WHY}" in candidate_detail(typed_candidate(missing), 1).plain


def test_wide_screens_show_the_column_narrow_ones_drop_it_first() -> None:
    assert "energy" in [c.key for c in visible_columns(200)]
    assert "energy" not in [c.key for c in visible_columns(62)]


def test_the_column_and_the_details_on_a_wide_screen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    _with_energy(session)
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        assert str(table.get_cell("0", "energy")).strip() == "42.7"
        assert str(table.get_cell("1", "energy")).strip() == "n/a"
        table.move_cursor(row=table.get_row_index("1"))
        await pilot.pause()
        detail = str(app.query_one("#candidate-detail", Static).render())
        assert "energy: unavailable: no CPU energy counter" in detail

    run_app(app, body, size=(160, 40))



def test_the_hardware_step_names_the_energy_counter_or_why_none() -> None:
    """The Hardware step says which counter measures energy here (the engine probes), or why none does: never a
    TDP guess."""
    from planner.engine.local import local_engine
    from planner.engine.remote import RemoteSession
    from planner.pipeline import PlanSession
    from planner.tui.screens.hardware import energy_rows

    session = RemoteSession(local_engine(PlanSession))
    try:
        rows = energy_rows(session.energy_counters)
    finally:
        session.client.close()
    assert [label for label, _ in rows] == ["Energy"]
    text = rows[0][1]
    assert ("via" in text) or (text.startswith("none: ") and "reported as unavailable" in text)
    assert "TDP" not in text

    def broken() -> dict:
        raise PermissionError("/sys/class/powercap: permission denied")

    assert energy_rows(broken) == [("Energy", "not probed (PermissionError: /sys/class/powercap: permission denied)")]
