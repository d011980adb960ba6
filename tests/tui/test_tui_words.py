"""What the TUI shows is in the user's words: no internal ids or document numbers, no command-line advice."""

from __future__ import annotations

import re

from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text

from planner.errors import ModelLoadError
from planner.tui.formatting import tui_words
from planner.tui.screens.help import help_markdown
from planner.tui.steps import STEPS
from planner.tui.widgets.notice import Notice

# Internal document numbers, decision-tree node ids, and shorthand the issue found on screen.
# Code a user would have to read as Python: a comparison, or a call such as torch.get_num_threads().
# Then what a new user's walk found (issue 25): an evidence field's name, interval notation, a spread read as
# a percentage, and tensor cores on a machine without an NVIDIA GPU (the recorded run's machine has none).
JARGON = re.compile(r"seed 00|seed table|\bseed \d|pitfall \d|\b(cpu|gpu|edge)\.\d|best/s|\bIQR\b|fidelity.gate"
                    r"|==|\w\(\)|suggested_channels|\[0, 1\)|repeats within|tensor.cores?\b", re.IGNORECASE)


def test_every_step_and_the_help_are_free_of_internal_words(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")
    screens: dict[str, str] = {}

    async def body(pilot):
        from textual.widgets import TabbedContent, TabPane

        await drive(pilot, "results")
        for step in STEPS:
            if step.id == "report":
                continue  # the preview is the recorded report.md, not text the TUI writes
            # Each pause lasts until the app has drawn what the key changed (no fixed waits).
            await pilot.press(str(step.number))
            await pilot.pause()
            # Every tab of a tabbed step (Profile, Results), each once; a step without tabs is one screen.
            tabbed = app.current_pane.query(TabbedContent)
            for tab in range(len(tabbed.first().query(TabPane)) if tabbed else 1):
                screens[f"{step.id} {tab}"] = screen_text(app)
                await pilot.press("right_square_bracket")
                await pilot.pause()
        app.action_help()
        await pilot.pause()
        screens["help"] = screen_text(app)

    run_app(app, body, size=(120, 40))
    found = {name: JARGON.findall(text) for name, text in screens.items() if JARGON.search(text)}
    assert found == {}
    assert "Keys" in screens["help"] or "keys" in screens["help"]
    # The help explains the shorthand the table and labels use, and each step in a line.
    text = help_markdown()
    assert "2t, 2x1t" in text and "QDQ" in text and "samp/s" in text
    assert all(f"{s.title}: " in text for s in STEPS)


def test_command_line_advice_names_the_tui_controls():
    assert tui_words("if you trust this file, pass --trust-code to let the planner run it") == (
        "if you trust this file, tick 'trust code' in step 2 to let the planner run it")
    assert tui_words("pass --out with a folder you can write to") == (
        "type in the Folder field (step 9) a folder you can write to")
    fixed = tui_words("e.g. --input ids:1x64:int64 --input mask:1x64:int64, or --input-shape 1x3x224x224")
    assert fixed == ("e.g. 'ids:1x64:int64 mask:1x64:int64' in the Inputs field (step 2), "
                     "or '1x3x224x224' in the Inputs field (step 2)")
    assert tui_words("flag: latency_ms = 'x' is not valid") == "Latency (ms) = 'x' is not valid"
    assert "--" not in tui_words("lower --latency-ms or --memory-mb")
    assert tui_words("machine busy: run `planner detect --ceilings --refresh` on an idle machine") == (
        "machine busy: press r (Measure ceilings, step 1) on an idle machine")
    # The validation data and output kind are the Model step's fields, whatever the message says of them.
    assert tui_words("--val-data faces does not exist") == "the Val data folder faces (step 2) does not exist"
    assert tui_words("pass --val-data with labels") == "pass the Val data field (step 2) with labels"
    assert tui_words("--val-preset 'x' is not a preset") == "the Val data preset (step 2) 'x' is not a preset"
    assert tui_words("--output-kind '0=x': unknown kind 'x'") == (
        "the Output kind field (step 2) '0=x': unknown kind 'x'")


def test_a_load_error_in_the_tui_says_which_tick_box(tmp_path):
    app = PlannerApp(model="demo:tiny", autostart=False, out_dir=tmp_path)

    async def body(pilot):
        await pilot.pause(0.1)
        notice = app.query_one("#model #notice", Notice)
        notice.show_exception(ModelLoadError("model.py runs code", "if you trust it, pass --trust-code"))
        text = str(notice.render())
        assert "--trust-code" not in text and "tick 'trust code' in step 2" in text

    run_app(app, body)


def test_a_bad_accuracy_drop_is_explained_in_plain_words(tmp_path):
    from textual.widgets import Input

    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "requirements")
        app.query_one("#req-accuracy_drop", Input).value = "1.5"
        await pilot.pause()
        error = app.query_one("#err-accuracy_drop", Notice)
        text = str(error.render())
        assert error.display and "from 0 up to (not including) 1" in text
        assert not JARGON.search(text)

    run_app(app, body)
