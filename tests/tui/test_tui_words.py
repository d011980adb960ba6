"""What the TUI shows is in the user's words: no internal ids or document numbers, no command-line advice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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


# Names a reader looks up as they are, not the planner's own: the instruction set and CPU flags Linux prints
# (x86_64, avx512_bf16), PyTorch's names (channels_last in a candidate's label, torch.ao's fuse_modules).
OUTSIDE_NAMES = {"x86_64", "avx512_bf16", "amx_bf16", "channels_last", "fuse_modules"}
# Proper names (products, companies, a CPU line), keys as their caps read (PgUp), and the Model step's input hints
# (demo:NAME, NAME=KIND).
PROPER_NAMES = {"PyTorch", "ONNX", "OpenVINO", "TensorRT", "NVIDIA", "AMD", "EPYC", "Intel", "ARM", "CUDA", "oneDNN",
                "PgUp", "PgDn", "NAME", "KIND"}
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
WORD = re.compile(r"(?<![A-Za-z0-9.])[A-Za-z][A-Za-z0-9_-]*")


def _abbreviation(word: str) -> bool:
    """Two capitals ('ORT', 'MiB'), or a short word with a capital and a digit ('L2', 'F16C'): a term a newcomer
    must look up. A runtime's own constant (ORT_ENABLE_ALL, OMP_NUM_THREADS) is looked up as it is."""
    if "_" in word and word.isupper():
        return False
    capitals = sum(ch.isupper() for ch in word)
    return capitals >= 2 or (capitals == 1 and word[0].isupper() and len(word) <= 5
                             and any(ch.isdigit() for ch in word))


def _without_commands(text: str) -> str:
    """The screen without the lines of the command a candidate's details give to reproduce it: it is copied, not
    read, and its JSON spec names the planner's own fields. Its lines are the ones with JSON's '":' or '","'."""
    return "\n".join(line for line in text.splitlines() if '":' not in line and '","' not in line)


async def _every_screen(pilot, *, rows: bool = True) -> dict[str, str]:
    """Each step's screen and each of its tabs, at the top and with every box scrolled to its end; with `rows`, the
    decision tree's and the results table's details for each of their rows."""
    from textual.widgets import DataTable, OptionList, TabbedContent, TabPane

    app = pilot.app
    await drive(pilot, "results")
    screens: dict[str, str] = {}
    for step in STEPS:
        await pilot.press(str(step.number))
        await pilot.pause()
        tabbed = app.current_pane.query(TabbedContent)
        for tab in range(len(tabbed.first().query(TabPane)) if tabbed else 1):
            screens[f"{step.id} {tab}"] = screen_text(app)
            boxes = [w for w in app.current_pane.query("*") if w.region.area and w.max_scroll_y > 0]
            for box in boxes:
                box.scroll_end(animate=False)
            await pilot.pause()
            screens[f"{step.id} {tab} end"] = screen_text(app)
            for box in boxes:
                box.scroll_home(animate=False)
            await pilot.press("right_square_bracket")
            await pilot.pause()
        for widget in app.current_pane.query("#tree, #candidates").results() if rows else ():
            widget.focus()
            count = widget.option_count if isinstance(widget, OptionList) else widget.row_count
            assert isinstance(widget, (OptionList, DataTable))
            for row in range(count):
                screens[f"{step.id} row {row}"] = screen_text(app)
                await pilot.press("down")
                await pilot.pause()
            await pilot.press("escape")
    app.action_help()
    await pilot.pause()
    screens["help"] = screen_text(app)
    return screens


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
def test_every_screen_speaks_plain_words_and_the_help_explains_each_abbreviation(size, tmp_path, monkeypatch):
    """No internal word on any screen (JARGON), no snake_case name or plugin id, and every abbreviation shown is in
    the help's glossary (issue 38 found `cpu_server`, `edge.int8`, `max_abs_error`, and ORT and "unc" unexplained)."""
    from planner.plugins import discover
    from planner.tui.screens.help import glossed

    monkeypatch.chdir(tmp_path)  # the report folder on screen is "out": no path of the test's own
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=Path("out"))
    screens: dict[str, str] = {}

    async def body(pilot):
        # Each row's details are the same words at either size: walked once, at the narrower.
        screens.update(await _every_screen(pilot, rows=size == (80, 24)))

    run_app(app, body, size=size)
    plugin_ids = set(discover()[0])
    layer_types = {layer.type for layer in session.recorded.baseline.layers}
    found: dict[str, set[str]] = {}
    for name, text in screens.items():
        text = _without_commands(text)
        words = set(match.group(0) for match in JARGON.finditer(text))
        words |= set(SNAKE.findall(text)) - OUTSIDE_NAMES
        words |= {plugin for plugin in plugin_ids if re.search(rf"(?<![\w.]){re.escape(plugin)}(?![\w])", text)}
        words |= {word for word in WORD.findall(text) if _abbreviation(word) and word not in glossed()
                  and word not in PROPER_NAMES and not any(t.startswith(word) for t in layer_types)}
        if words:
            found[name] = words
    assert found == {}
    assert "planner: keys" in screens["help"]


def test_every_short_word_the_tables_write_is_in_the_glossary():
    from planner.results import energy_view
    from planner.results.status_look import LOOKS
    from planner.tui.formatting import ABBREVIATIONS
    from planner.tui.screens.help import glossed
    from planner.tui.screens.results import _MISS_WORDS, COLUMNS, VERDICT_MARK

    shorts = {look.short for look in LOOKS.values()} | set(ABBREVIATIONS.values()) | set(_MISS_WORDS.values())
    shorts |= set(energy_view.SHORT.values()) | {"n/rec", "meets", "met at p50", *VERDICT_MARK.values()}
    shorts |= {word for column in COLUMNS for word in column.header.split()}
    assert shorts - glossed() == set()
    # The help says each step in a line, and the glossary is in it.
    text = help_markdown()
    assert all(f"{s.title}: " in text for s in STEPS)
    assert "| 2t, 2x1t |" in text and "| ORT | ONNX Runtime |" in text and "| unc |" in text
