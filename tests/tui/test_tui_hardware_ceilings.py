"""Hardware step: the ceilings say when and how they were measured, and r measures them again (and says so)."""

from __future__ import annotations

from textual.widgets import Label
from tui_support import PlannerApp, RecordedSession, run_app, screen_text, typed_candidate, wait_for, wait_idle

from planner.tui.widgets.kv import KeyValues
from planner.tui.widgets.progress import RunProgress


def _ceilings_text(app) -> str:
    rows = app.query_one("#hardware").query_one("#ceilings", KeyValues).rows
    return "\n".join(f"{key}: {value}" for key, value in rows)


def test_measure_ceilings_measures_again_and_says_it_did(tmp_path):
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await wait_for(pilot, lambda: session.ceilings is not None, 60, "the start-up ceilings")
        await wait_idle(pilot)
        assert getattr(session, "refreshed", 0) == 0  # start-up reads this machine's cached ceilings
        shown = _ceilings_text(app)
        # When and how they were measured, and how to measure them again.
        assert "Measured: measured 2026-11-21T05:49:58+00:00; quick mode; best of 3 repeats" in shown
        assert "press r to measure them again now; until then these figures, cached for this machine, are used" in shown
        await pilot.press("r")
        await wait_idle(pilot)
        assert session.refreshed == 1
        stage = str(app.query_one("#hardware").query_one(RunProgress).query_one("#stage", Label).render())
        assert stage == "ceilings measured again"
        assert "ceilings measured again" in screen_text(app)  # whole at 80x24, not cut
        assert "Again: measured again now: fp32 67.1 GFLOP/s (was 67.1 GFLOP/s)" in _ceilings_text(app)

    run_app(app, body)


def test_the_ceilings_show_the_int8_roof_and_a_kept_out_remeasure():
    from planner.hardware.ceiling_values import Ceilings
    from planner.tui.screens.hardware import ceiling_rows, remeasured_text

    note = ("a re-measure under load (0.99 cores busy) was kept out of the cache: fp32 194 GFLOP/s, bf16 139 "
            "GFLOP/s, bandwidth 22 GB/s; the cached figures (idle, measured 2026-11-25T10:00:00+00:00) are used")
    ceilings = Ceilings(peak_flops={"fp32": 205e9, "bf16": 412e9, "int8": 1648e9}, bandwidth_bytes_per_s=57e9,
                        source="measured", details={"mode": "quick", "measured_while": "idle",
                                                    "int8_method": "torch._int_mm", "kept_out_note": note})
    rows = dict(ceiling_rows(ceilings))
    assert rows["Peak"] == "fp32 205 GFLOP/s, bf16 412 GFLOP/s, int8 1.65 TFLOP/s"
    assert rows["Ridge point"].startswith("3.6 FLOP/byte (fp32), 7.23 (bf16), 28.9 (int8): below it")
    assert "2 per multiply-add" in rows["INT8 roof"] and "torch._int_mm" in rows["INT8 roof"]
    assert rows["Warning"] == note
    # What r found: the figures it measured and that they were kept out, not the cached ones as if new.
    assert remeasured_text(ceilings, ceilings) == note


def test_the_candidate_details_state_the_share_of_its_own_roof():
    from planner.tui.screens.results import candidate_detail

    cand = {"label": "INT8 (OpenVINO)", "plugin": "openvino-int8", "precision": "int8", "status": "ok",
            "latency_ms": {"p50_ms": 18.0, "p95_ms": 19.0, "p99_ms": 20.0, "samples": 20},
            "roof_share": {"precision": "int8", "attained_flops_per_s": 400e9, "peak_flops_per_s": 2e12,
                           "share": 0.2, "warning": ""}}
    assert "roof: 20% of the INT8 roof (400 GFLOP/s of 2 TFLOP/s)" in candidate_detail(typed_candidate(cand), 1).plain
    above = {**cand, "roof_share": {**cand["roof_share"], "share": None,
                                    "warning": "attains 3.6 TFLOP/s, above the measured int8 roof of 2 TFLOP/s: "
                                               "the ceiling was measured while the machine was busy; run "
                                               "`planner detect --ceilings --refresh`"}}
    shown = candidate_detail(typed_candidate(above), 1).plain
    assert "above the measured int8 roof" in shown and "press r (Measure ceilings, step 1)" in shown


def test_the_hint_under_the_ceilings_says_whether_they_are_cached():
    """Issue 38: the Hardware step said the ceilings were not cached, then that the cached figures were used."""
    from planner.hardware.ceiling_values import Ceilings
    from planner.tui.screens.hardware import ceiling_rows, remeasure_hint

    peaks = {"peak_flops": {"fp32": 67e9}, "bandwidth_bytes_per_s": 9e9}
    measured = Ceilings(**peaks, source="measured", details={"mode": "quick", "measured_while": "idle"})
    unwritten = Ceilings(**peaks, source="measured", details={"cache": "cache not written to /ro/x.json: read-only"})
    estimate = Ceilings(**peaks, source="estimate: 2 cores x 2.0 GHz x 16 FLOP/cycle",
                        details={"measurement_error": "RuntimeError: no clock", "mode": "quick"})

    def shown(ceilings) -> str:
        return " ".join(f"{k}: {v}" for k, v in [*ceiling_rows(ceilings), ("Again", remeasure_hint(ceilings))])

    assert "cached for this machine, are used" in shown(measured) and "not cached" not in shown(measured)
    for uncached in (unwritten, estimate):
        text = shown(uncached)
        assert "not cached" in text and "cached for this machine" not in text and "cached figures" not in text
    assert "the next start measures them again" in remeasure_hint(unwritten)
    assert "not a measurement" in remeasure_hint(estimate)
