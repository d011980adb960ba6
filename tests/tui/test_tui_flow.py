"""What each step says it does, on a recorded run (the whole flow on the real engine is test_tui_journey.py)."""

from __future__ import annotations

import pytest
from textual.widgets import Label
from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text

pytestmark = pytest.mark.slow


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
