"""A decoder LLM folder in the TUI: the Model step shows its facts and the plan's two settings, step 7's r runs the
plan (a recorded one, served by the real engine server) and lists its candidates, c stops it after the current
candidate, step 9 shows its report, and loading another model clears it all."""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import pytest
from textual.widgets import Input
from tui_support import (
    LLM_FOLDER,
    PlannerApp,
    RecordedLlmPlanner,
    RecordedSession,
    run_app,
    screen_text,
    wait_for,
    wait_idle,
)

from planner.tui.widgets.notice import Notice


@pytest.fixture
def llm_app(tmp_path, monkeypatch):
    """The app started on a copy of the tiny Llama's folder, named `tiny` from the test's own folder (paths on screen
    stay the same in every run), with a recorded LLM plan behind the engine."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(LLM_FOLDER, tmp_path / "tiny")
    planner = RecordedLlmPlanner()
    app = PlannerApp(model="tiny", session=RecordedSession(), llm_planner=planner, out_dir=Path("out"))
    return app, planner


async def _loaded(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.session.state.llm is not None, 60, "the LLM folder's load")
    await wait_idle(pilot)
    app.clear_notifications()


def test_the_model_step_shows_the_llm_facts_and_the_plan_settings(llm_app):
    app, _ = llm_app

    async def body(pilot):
        await _loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "tiny: a decoder language model (LlamaForCausalLM)" in text
        assert "4 heads sharing 2 key/value heads, head size 16" in text
        assert "512 tokens" in text and "1,024 tokens" in text and "139,584" in text
        # The other models' fields give way to the plan's two settings, with their defaults.
        assert "Inputs" not in text and "Val data" not in text
        assert app.query_one("#llm-prompts", Input).value == "32,128,512"
        assert app.query_one("#llm-new-tokens", Input).value == "64"
        assert app.query_one("#llm-gguf", Input).value == "" and "GGUF file" in text  # optional, for llama.cpp
        app.query_one("#llm-note").scroll_visible(animate=False)
        await pilot.pause()
        assert "(steps 4–6) do not apply" in screen_text(app)
        await pilot.press("4")
        await pilot.pause()
        assert "profiling does not apply to a language model" in screen_text(app)

    run_app(app, body, size=(100, 30))


def test_step_7_runs_the_llm_plan_lists_its_candidates_and_step_9_shows_its_report(llm_app):
    app, planner = llm_app

    async def body(pilot):
        await _loaded(pilot)
        app.query_one("#llm-gguf", Input).value = " tiny-q4_0.gguf "
        await pilot.press("7")
        await pilot.pause()
        assert "r Run LLM plan" in screen_text(app)
        await pilot.press("r")
        await wait_idle(pilot)
        options = planner.calls[0]
        assert (options.prompt_lengths, options.new_tokens, options.quick) == ((32, 128, 512), 64, True)
        assert options.gguf == Path("tiny-q4_0.gguf")
        assert "llama.cpp on tiny-q4_0.gguf" in screen_text(app)
        text = screen_text(app)
        assert "done: 2 measured; results in out" in text
        assert "★ PyTorch eager, bf16 weights, 2 threads" in text
        assert "TTFT 73.2 ms at 512 tokens · TPOT p50 14.1 ms · 71.1 tokens/s" in text
        assert "fidelity met" in text and "PyTorch eager, fp32 weights, 2 threads (the original)" in text
        assert "Read roof: 15.1 GB/s with 2 threads" in text
        await pilot.press("9")
        await pilot.pause()
        text = screen_text(app)
        assert "Deployment plan: tiny (a decoder language model)" in text and "from out" in text

    run_app(app, body, size=(100, 30))


def test_cancel_stops_the_llm_plan_after_the_current_candidate(llm_app):
    app, planner = llm_app
    planner.gate = threading.Event()

    async def body(pilot):
        await _loaded(pilot)
        await pilot.press("7", "r")
        await wait_for(pilot, lambda: "measuring: PyTorch eager, fp32" in screen_text(app), 30, "the first candidate")
        await pilot.press("c")
        await pilot.pause()
        assert "cancel requested" in screen_text(app)
        planner.gate.set()
        await wait_idle(pilot)
        text = screen_text(app)
        assert "cancelled: 1 measured, 1 not reached" in text
        assert "not reached: cancelled" in text

    run_app(app, body, size=(100, 30))


def test_settings_the_plan_cannot_take_are_refused_before_it_starts(llm_app):
    app, planner = llm_app

    async def body(pilot):
        await _loaded(pilot)
        app.query_one("#llm-prompts", Input).value = "32,lots"
        await pilot.press("7", "r")
        await pilot.pause()
        assert planner.calls == [] and app.job is None
        notice = str(app.query_one("#optimize #notice", Notice).render())
        assert "prompt lengths '32,lots'" in notice and "fix it in step 2" in notice

    run_app(app, body, size=(100, 30))


def test_loading_another_model_after_the_llm_plan_clears_its_view(llm_app):
    app, _ = llm_app

    async def body(pilot):
        await _loaded(pilot)
        await pilot.press("7", "r")
        await wait_idle(pilot)
        assert "★ PyTorch eager" in screen_text(app)
        app.query_one("#source", Input).value = "demo:tiny"
        app.pane("model").run_step()
        await wait_for(pilot, lambda: app.session.model is not None, 30, "demo:tiny's load")
        await wait_idle(pilot)
        assert app.session.state.llm is None
        await pilot.press("7")
        await pilot.pause()
        text = screen_text(app)
        assert "★" not in text and "LLM plan" not in text and "Answer the checklist (step 5) first" in text
        await pilot.press("9")
        await pilot.pause()
        assert "Deployment plan: tiny (a decoder language model)" not in screen_text(app)

    run_app(app, body, size=(100, 30))


def test_llm_plan_snapshot(llm_app, snap_compare):
    """Step 7 at 80x24 after the recorded LLM plan: the decision, the read roof and each candidate's figures."""
    app, _ = llm_app

    async def walk(pilot) -> None:
        await _loaded(pilot)
        await pilot.press("7", "r")
        await wait_idle(pilot)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=walk)


def test_a_candidate_line_gives_its_share_of_the_read_roof_unless_the_weights_fit_in_the_cache():
    import dataclasses
    import io

    from rich.console import Console

    from planner.llm.results import read_llm_plan
    from planner.tui.screens.llm import candidate_lines

    def shown(plan) -> str:
        console = Console(file=io.StringIO(), width=200, color_system=None)
        console.print(candidate_lines(plan))
        return console.file.getvalue()

    recorded = read_llm_plan(LLM_FOLDER.parent / "results.json")
    assert recorded.cache_resident and "of the roof" not in shown(recorded)
    assert "no candidate is given a share of it" in shown(recorded)
    # The same figures measured from DRAM: each candidate's decode as a share of the 15.1 GB/s roof.
    text = shown(dataclasses.replace(recorded, cache_resident=False))
    assert "71.1 tokens/s · 0.166% of the roof · fidelity met" in text
    assert "Read roof: 15.1 GB/s with 2 threads (decoding a token reads every weight once)." in text
    # A candidate that was not measured says why, under its title.
    stopped = dataclasses.replace(recorded.candidates[1], status="not reached", reason="cancelled", timings=None)
    assert "not reached: cancelled" in shown(dataclasses.replace(recorded, candidates=(recorded.candidates[0],
                                                                                        stopped)))


def test_every_llm_screen_speaks_plain_words_and_the_help_explains_each_abbreviation(llm_app):
    """The LLM's screens (every step after its plan, each scrolled to its end, and the report) pass the words check
    the other models' walk passes: no snake_case name or plugin id, every abbreviation in the help's glossary."""
    from test_tui_words import JARGON, OUTSIDE_NAMES, PROPER_NAMES, SNAKE, WORD, _abbreviation, _without_commands

    from planner.plugins import discover
    from planner.tui.screens.help import glossed
    from planner.tui.steps import STEPS

    app, _ = llm_app
    screens: dict[str, str] = {}

    async def body(pilot):
        await _loaded(pilot)
        await pilot.press("7", "r")
        await wait_idle(pilot)
        for step in STEPS:
            await pilot.press(str(step.number))
            await pilot.pause()
            screens[step.id] = screen_text(app)
            for box in [w for w in app.current_pane.query("*") if w.region.area and w.max_scroll_y > 0]:
                box.scroll_end(animate=False)
            await pilot.pause()
            screens[f"{step.id} end"] = screen_text(app)

    run_app(app, body)
    plugin_ids = set(discover()[0])
    # The architecture's class name is looked up as it is; the report's two lines of Python are copied, not read.
    outside = OUTSIDE_NAMES | {"LlamaForCausalLM"}
    code = re.compile(r"torch\.\w+|from_pretrained\(|\.eval\(\)")
    found = {}
    for name, text in screens.items():
        text = "\n".join(line for line in _without_commands(text).splitlines() if not code.search(line))
        words = {match.group(0) for match in JARGON.finditer(text)} | (set(SNAKE.findall(text)) - outside)
        words |= {plugin for plugin in plugin_ids if f" {plugin} " in text}
        words |= {word for word in WORD.findall(text) if _abbreviation(word) and word not in glossed()
                  and word not in PROPER_NAMES | outside}
        if words:
            found[name] = words
    assert found == {}, found
    assert "TTFT" in screens["optimize"] and "★" in screens["optimize"]


def test_a_blank_setting_takes_the_default_its_placeholder_shows():
    from planner.tui.screens.llm import DEFAULT_NEW_TOKENS, DEFAULT_PROMPTS, SettingsError, parse_settings

    assert parse_settings("  ", "") == ((32, 128, 512), 64) == parse_settings(DEFAULT_PROMPTS, DEFAULT_NEW_TOKENS)
    assert parse_settings("64 16,16", " 8 ") == ((16, 64), 8)
    with pytest.raises(SettingsError, match="new tokens '1': type a whole number of at least 2"):
        parse_settings("", "1")
