"""One 80×24 snapshot per step, replaying a recorded run so every number is fixed.

Update after an intended change with: pytest tests/tui/test_tui_snapshots.py --snapshot-update
(then look at the SVGs under __snapshots__ before committing them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_support import PlannerApp, RecordedSession, SlowCandidateSession, drive

from planner.tui.steps import STEPS


@pytest.mark.parametrize("step", [s.id for s in STEPS])
def test_step_snapshot(step, snap_compare, tmp_path, monkeypatch):
    # The report folder is shown on screen: keep it the same relative path in every run.
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=Path("out"))

    async def walk(pilot) -> None:
        await drive(pilot, step)

    assert snap_compare(app, terminal_size=(80, 24), run_before=walk)


def test_results_p50_plot_snapshot(snap_compare, tmp_path, monkeypatch):
    """The p50 plot at 80x24 with candidates from 0.0364 to 42 ms: each label on its own bar, a log axis (issue 38)."""
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=SlowCandidateSession(), out_dir=Path("out"))

    async def walk(pilot) -> None:
        await drive(pilot, "results")
        await pilot.press("right_square_bracket")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=walk)
