"""The Results step's table: a predicted column beside the measured speedup, readable at 80x24."""

from __future__ import annotations

import dataclasses

from textual.widgets import DataTable
from tui_support import PlannerApp, RecordedSession, SlowCandidateSession, drive, run_app, screen_text, typed_candidate

from planner.results import Prediction
from planner.tui.screens.results import predicted_cell, visible_columns


def _with_prediction(session: RecordedSession) -> int:
    """Give the first measured candidate a band its recorded speedup falls inside; returns its index."""
    cands = list(session.recorded.candidates)
    index = next(i for i, c in enumerate(cands) if i > 0 and c.speedup is not None)
    speedup = cands[index].speedup
    assert speedup is not None
    cands[index] = dataclasses.replace(cands[index], prediction=Prediction(
        round(speedup * 0.5, 2), round(speedup * 2, 1), "an fp32 runtime with graph fusion", family="runtime"))
    session.recorded = dataclasses.replace(session.recorded, candidates=tuple(cands))
    return index


def test_predicted_column_shows_the_band_and_a_dash_for_the_baseline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    predicted = _with_prediction(session)
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        keys = [col.key.value for col in table.ordered_columns]
        assert "pred" in keys and keys.index("pred") == keys.index("speedup") + 1
        band = session.results.candidates[predicted].prediction
        assert band is not None
        cell = str(table.get_cell(str(predicted), "pred")).strip()
        assert cell == f"{band.low:g}-{band.high:g}✓"  # the measured speedup fell inside the band
        assert str(table.get_cell("0", "pred")).strip() == "—"  # the baseline has no prediction
        # At 80x24 every shown column fits, and the candidate names keep a readable width.
        widths = {col.key.value: col.get_render_width(table) for col in table.ordered_columns}
        assert sum(widths.values()) <= table.size.width
        assert widths["label"] >= 16
        assert "mem" not in keys  # memory is the first column a narrow screen drops (it stays in the details)

    run_app(app, body)


def test_wide_screens_keep_every_column_and_the_marks_say_where_it_fell() -> None:
    assert [c.key for c in visible_columns(200)] == ["rank", "p50", "p95", "energy", "rate", "mem", "speedup", "pred",
                                                     "status"]
    assert "mem" not in [c.key for c in visible_columns(62)]
    assert [c.key for c in visible_columns(30)][:2] == ["rank", "p50"]
    band = {"prediction": {"low": 1.5, "high": 4.0, "basis": "VNNI"}}
    assert predicted_cell(typed_candidate({**band, "speedup": 2.0})) == "1.5-4✓"
    assert predicted_cell(typed_candidate({**band, "speedup": 0.9})) == "1.5-4↓"
    assert predicted_cell(typed_candidate({**band, "speedup": 5.0})) == "1.5-4↑"
    assert predicted_cell(typed_candidate({**band, "speedup": None})) == "1.5-4"
    assert predicted_cell(typed_candidate({"prediction": None, "speedup": 1.0})) == "—"


def test_the_details_say_how_many_requests_were_in_flight() -> None:
    from planner.tui.screens.results import candidate_detail

    cand = {"label": "openvino f32 throughput 2t", "status": "ok",
            "streams": [{"batch": 8, "streams": 1, "samples_per_s": 900.0, "basis": "as configured"},
                        {"batch": 8, "streams": 2, "samples_per_s": 1700.0, "basis": "OpenVINO THROUGHPUT hint"}]}
    text = candidate_detail(typed_candidate(cand), 3).plain
    assert ("parallel streams at batch 8: one request at a time 900 samples/s; 2 at once 1,700 samples/s "
            "(OpenVINO THROUGHPUT hint)") in text


def test_the_details_say_whether_a_leader_reproduced_its_screen() -> None:
    from planner.tui.screens.results import candidate_detail

    cand = {"label": "openvino bf16 latency 2t", "status": "ok", "latency_ms": {"p50_ms": 1.6, "samples": 900},
            "confirmation": {"screen_p50_ms": 0.8, "rel_change": 1.0, "reproduced": False,
                             "note": "the screen was disturbed or too short; the full figure is the one ranked"}}
    text = candidate_detail(typed_candidate(cand), 2).plain
    assert "confirmed with the full method: the 2-second screen read 0.8 ms, did not reproduce within 10%" in text
    assert "the full figure is the one ranked" in text
    assert "confirmed" not in candidate_detail(typed_candidate({"label": "x", "status": "ok"}), 1).plain


def test_a_faster_unconfirmed_candidate_is_named_above_the_table(tmp_path, monkeypatch):
    from textual.widgets import Label

    from planner.results import Status, rank_candidates

    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    cands = list(session.recorded.candidates)
    order = rank_candidates(cands).order
    best, runner_up = cands[order[0]], order[1]
    # The runner-up drifted on generated inputs only, and measured faster than the best: it waits on real data.
    cands[runner_up] = dataclasses.replace(cands[runner_up], status=Status.UNCONFIRMED, speedup=(best.speedup or 1) * 2,
                                           reason="not established on real data: on generated inputs, top-1 40%")
    session.recorded = dataclasses.replace(session.recorded, candidates=tuple(cands))
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        headline = app.query_one("#headline", Label)
        assert headline.display
        shown = str(headline.render())
        assert shown.startswith(f"Best confirmed: {best.label} at ")
        assert f"({cands[runner_up].label}) if it holds on your data: re-run with --val-data DIR" in shown
        table = app.query_one("#candidates", DataTable)
        assert str(table.get_cell(str(runner_up), "status")).strip() == "unc"

    run_app(app, body)


def test_without_an_unconfirmed_candidate_no_headline_shows(tmp_path, monkeypatch):
    from textual.widgets import Label

    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        assert not app.query_one("#headline", Label).display

    run_app(app, body)


def test_a_small_slowdown_keeps_its_x_at_80x24(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = SlowCandidateSession()  # one candidate at 42 ms against a 0.297 ms baseline: 0.00706x
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        keys = [col.key.value for col in table.ordered_columns]
        speeds = [str(table.get_row_at(r)[keys.index("speedup")]).strip() for r in range(table.row_count)]
        assert "0.00706x" in speeds and all(s.endswith("x") for s in speeds)
        assert "0.00706x" in screen_text(app)  # on screen whole, not cut to the column's usual 7 characters

    run_app(app, body)
