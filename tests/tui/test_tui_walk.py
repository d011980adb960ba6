"""What a new user's walk through the TUI at 80x24 found (issue 25): each fix, as the user sees it."""

from __future__ import annotations

import re
import threading

from tui_support import PlannerApp, RecordedSession, drive, run_app, screen_text, wait_for, wait_idle

from planner.codec import to_data
from planner.events import Event
from planner.pipeline.steps import Step
from planner.results import rank_candidates
from planner.tui.screens.confirm import ConfirmDiscard


def recorded_app(session: RecordedSession, tmp_path) -> PlannerApp:
    return PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")


class PhasedSession(RecordedSession):
    """An optimize that goes through every phase the engine's does, pausing at each for the test to look."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.step = threading.Semaphore(0)

    def _pause(self) -> None:
        assert self.step.acquire(timeout=30), "the test never let the run go on"

    def optimize(self, *, plugins=None, timeout_s: float = 300.0, val_data=None):
        self._need(self.plan, "plan")
        if self.out_dir is None:
            self.set_out_dir(None)
        self.discard(Step.OPTIMIZE)
        recorded = list(self.recorded.candidates[1:])
        total = len(recorded)
        self.on_event(Event("stage", "building candidates: onnxruntime", stage="candidates"))
        self._pause()
        for i, cand in enumerate(recorded):
            self.on_event(Event("candidate", f"measuring {cand.label}", stage="measure", index=i, total=total))
            self._pause()
            self.add_candidate(cand)
            self.on_event(Event("candidate_done", f"  ok: {cand.label}", stage="measure", index=i + 1, total=total))
        # Confirming counts from 0 again, and the interaction cells have no counts at all.
        self.on_event(Event("candidate", "confirming A, B with the full method, in turns", stage="confirm",
                            index=0, total=2))
        self._pause()
        self.on_event(Event("candidate_done", "A confirmed", stage="confirm", index=1, total=2))
        self.on_event(Event("stage", "interaction: A x B", stage="interaction"))
        self._pause()
        self.update(ranking=rank_candidates(self.results.candidates, self.results.requirements))
        self.done(Step.OPTIMIZE)
        return self.results.candidates


def progress_line(app, phase: str) -> str:
    """The screen's line that names `phase` (the progress row)."""
    return next((line for line in screen_text(app).splitlines() if phase in line), "")


def percent(line: str) -> int:
    found = re.search(r"(\d+)%", line)
    assert found, f"no percentage on {line!r}"
    return int(found.group(1))


def test_optimize_progress_is_one_bar_that_never_goes_back_and_names_each_phase(tmp_path):
    session = PhasedSession()
    app = recorded_app(session, tmp_path)
    total = len(session.recorded.candidates) - 1

    async def body(pilot):
        await drive(pilot, "optimize")
        await pilot.press("r")
        await wait_for(pilot, lambda: "building the candidates" in screen_text(app), 10, "the build phase")
        seen: list[int] = []
        expected = [f"measuring candidates {i + 1}/{total}" for i in range(total)]
        expected += ["confirming the leaders", "measuring the interaction cells"]
        for phase in expected:
            session.step.release()
            await wait_for(pilot, lambda phase=phase: phase in screen_text(app), 10, phase)
            seen.append(percent(progress_line(app, phase)))
        assert seen == sorted(seen) and seen[0] < seen[-1]
        # The interaction cells carry no counts: the bar stays where confirming left it (one leader of two
        # confirmed), not at 0%.
        assert seen[-1] >= seen[-2] > 50
        assert "A x B" in progress_line(app, "measuring the interaction cells")
        session.step.release()
        await wait_idle(pilot)
        assert percent(progress_line(app, "candidates measured")) == 100

    run_app(app, body)


def toasts(app) -> str:
    """The notifications the user is shown (pilot tests draw no toasts), as one line of text."""
    return " ".join(str(n.message) for n in app._notifications)


def test_s_always_answers_and_says_what_must_happen_before_there_is_something_to_save(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "hardware")
        assert "s Save" in screen_text(app)
        await pilot.press("s")
        await wait_for(pilot, lambda: "Nothing to save yet" in toasts(app), 10, "the answer to s")
        assert "profile the model first (step 4)" in toasts(app)
        assert app.current == "hardware" and not (tmp_path / "out" / "report.md").exists()
        # Once profiled, s saves from step 1.
        app.clear_notifications()
        await pilot.press("4", "r")
        await wait_idle(pilot)
        await pilot.press("1", "s")
        await wait_idle(pilot)
        assert app.current == "report" and (tmp_path / "out" / "report.md").exists()
        # A new model drops the baseline: s says so again instead of doing nothing.
        app.clear_notifications()
        await pilot.press("2", "r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question before discarding")
        await pilot.press("y")
        await wait_idle(pilot)
        assert session.baseline is None
        await pilot.press("s")
        await wait_for(pilot, lambda: "Nothing to save yet" in toasts(app), 10, "the answer to s")
        assert app.current == "model"

    run_app(app, body)


def test_the_demo_dropdown_follows_what_is_typed_in_the_source_field(tmp_path):
    from textual.widgets import Input, Select

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "model")
        select = app.query_one("#demo", Select)
        await wait_for(pilot, lambda: select.value == "demo:tiny", 60, "the demo list")
        source, inputs = app.query_one("#source", Input), app.query_one("#inputs", Input)
        inputs.value = "1x1x8x8"
        source.value = ""
        source.focus()
        await pilot.press(*"demo:digits")
        await pilot.pause()
        assert select.value == "demo:digits"
        assert "demo:digits —" in screen_text(app) and "demo:tiny —" not in screen_text(app)
        # Not a demo: the dropdown shows its prompt, never a demo that is not the one to load.
        await pilot.press(*"-mine")
        await pilot.pause()
        assert select.is_blank() and "pick a demo model" in screen_text(app)
        # Following the field never re-fills the form.
        assert source.value == "demo:digits-mine" and inputs.value == "1x1x8x8"
        assert session.load_calls[-1]["source"] == "demo:tiny"  # and loads nothing

    run_app(app, body)


class BusyCeilingSession(RecordedSession):
    """A baseline that beat ceilings measured while the machine was busy; r on step 1 measures them again, idle."""

    def __init__(self, **kwargs) -> None:
        from dataclasses import replace

        from planner.hardware.ceiling_notes import EXCEEDED_WARNING

        super().__init__(**kwargs)
        base = self.recorded.baseline
        bottleneck = replace(base.bottleneck, ceiling_warning=EXCEEDED_WARNING,
                             explanation=f"{base.bottleneck.explanation} ({EXCEEDED_WARNING})")
        self.recorded = replace(self.recorded, baseline=replace(base, bottleneck=bottleneck,
                                                                ceilings=self.fixture["ceilings"]))

    def measure_ceilings(self, *, quick: bool = False, refresh: bool = False):
        from dataclasses import replace

        ceilings = super().measure_ceilings(quick=quick, refresh=refresh)
        if refresh:  # a new measurement: a new time, on an idle machine
            self.ceilings = replace(ceilings, details={**ceilings.details, "timestamp": "2026-11-26T03:00:00",
                                                       "measured_while": "idle"})
            self.update(ceilings=self.ceilings)
        return self.ceilings


def profile_summary(app) -> str:
    """The Profile step's Summary tab: its rows and the roofline explanation under them (read by scrolling)."""
    from textual.widgets import Static

    from planner.tui.widgets.kv import KeyValues

    pane = app.query_one("#profile")
    rows = "\n".join(f"{key}: {value}" for key, value in pane.query_one("#latency", KeyValues).rows)
    return f"{rows}\n{pane.query_one('#bound', Static).render()}"


def test_the_busy_ceiling_hint_goes_once_the_ceilings_were_measured_again(tmp_path):
    session = BusyCeilingSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        text = profile_summary(app)
        assert "Ceiling: measured above the cached ceiling: the ceiling was measured while the machine was busy; " \
               "press r (Measure ceilings, step 1)" in text
        assert "machine was busy" in text.splitlines()[-1]  # the explanation says it too, in the TUI's words
        assert "planner detect" not in text
        await pilot.press("1", "r")
        await wait_idle(pilot)
        await pilot.press("4")
        await pilot.pause()
        text = profile_summary(app)
        assert "machine was busy" not in text and "Measure ceilings, step 1" not in text
        assert "Ceiling: measured again since this profile (step 1): press r to profile against the new " \
               "ceilings" in text
        assert "Ceiling measured again since" in " ".join(screen_text(app).split())

    run_app(app, body)


def test_the_optimize_log_has_the_panes_width_and_most_of_its_height_at_80x24(tmp_path, monkeypatch):
    from pathlib import Path

    from textual.widgets import RichLog

    monkeypatch.chdir(tmp_path)  # the log names the results folder: keep it short
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=Path("out"))

    async def body(pilot):
        await drive(pilot, "optimize")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the optimize to start")
        # The user looks at another step while the candidates are measured: the log's lines arrive hidden.
        await pilot.press("1")
        await pilot.pause()
        session.gate.set()
        await wait_idle(pilot)
        await pilot.press("7")
        await pilot.pause()
        log = app.query_one("#optimize").query_one(RichLog)
        assert log.size.width >= 58 and log.size.height >= 11  # of the pane's 62 columns and 22 rows
        rows = [line.split("▕", 1)[1].strip() for line in screen_text(app).splitlines() if "▕" in line]
        assert "✓ done: 8 candidates measured; results in out" in rows  # one line, not wrapped at 20 columns
        assert "… measuring openvino f32 throughput 2t" in rows
        assert sum(1 for row in rows if row.startswith(("… measuring", "ok:"))) >= 9

    run_app(app, body)


def pane_rows(app) -> list[str]:
    """The step pane's lines at 80x24 (right of the step list), without the scrollbar and the bar down the left of
    a focused list."""
    return [line.split("▕", 1)[1].rstrip(" ▁▂▃▄▅▆▇█").strip().removeprefix("▌").strip()
            for line in screen_text(app).splitlines() if "▕" in line]


def test_plugin_rows_are_never_cut_and_a_plugin_that_cannot_run_says_why_when_highlighted(tmp_path):
    from textual.widgets import SelectionList

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "optimize")
        plugins = app.query_one(SelectionList)
        plugins.focus()
        for _ in range(plugins.option_count):
            rows = [row for row in pane_rows(app) if row.startswith("▐")]
            assert rows and not [row for row in rows if "…" in row]
            await pilot.press("down")
            await pilot.pause()
        # The last plugins cannot run here; highlighting one gives every reason under the list.
        await pilot.press("end", "up")
        await pilot.pause()
        text = "\n".join(pane_rows(app))
        assert "TensorRT (NVIDIA GPU) — unavailable (see below)" in text  # its title, not its id
        assert "✗ TensorRT not installed" in text and "✗ no NVIDIA GPU detected" in text
        await pilot.press("space")
        await pilot.pause()
        assert "nvidia.tensorrt" not in plugins.selected
        assert "can't run here (see below)" in text + "\n".join(pane_rows(app))

    run_app(app, body)


def test_decision_tree_rows_keep_what_the_walk_decided_at_80x24(tmp_path):
    from textual.widgets import OptionList

    from planner.tui.screens.tree import TreePane

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "tree")
        results = {str(v["result"]) for v in to_data(session.path.record())["visited"]}
        pane = app.query_one(TreePane)
        tree = pane.query_one(OptionList)
        tree.focus()
        seen: set[str] = set()
        rows: list[str] = []
        for _ in range(tree.option_count):
            rows += pane_rows(app)
            await pilot.press("pagedown")
            await pilot.pause()
        seen = {row.rsplit("→ ", 1)[1] for row in rows if "→ " in row}
        assert seen and seen <= results  # every decision whole, e.g. "recommended", never "recomme"
        assert "recommended" in seen
        # No node's sentence is cut: each is on screen whole, wrapped under itself.
        assert not [row for row in rows if "…" in row]
        screen = " ".join(" ".join(row.lstrip("▌│├└─ ✓").split()) for row in rows)
        sentences = [str(node.text) for node in pane.nodes if node.id in {v.id for v in session.path.visited}]
        assert [s for s in sentences if " ".join(s.split()) not in screen] == []

    run_app(app, body)


def test_end_and_pagedown_scroll_the_step_from_the_step_list_and_from_the_pane(tmp_path):
    from textual.containers import VerticalScroll
    from textual.widgets import Button

    from planner.tui.widgets.step_list import StepList

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "checklist")
        items = app.query_one("#checklist #items", VerticalScroll)
        assert isinstance(app.focused, StepList) and items.max_scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert 0 < items.scroll_y
        await pilot.press("end")
        await pilot.pause()
        assert items.scroll_y == items.max_scroll_y
        assert app.current == "checklist"  # the keys scrolled the step; they did not move to another
        await pilot.press("home")
        await pilot.pause()
        assert items.scroll_y == 0
        # Hardware: from the step list, and with its button focused.
        await pilot.press("1")
        await pilot.pause()
        machine = app.query_one("#hw-scroll", VerticalScroll)
        await pilot.press("end")
        await pilot.pause()
        assert machine.scroll_y == machine.max_scroll_y > 0
        assert "every probe read what it looks for" in screen_text(app) or "Probe notes" in screen_text(app)
        app.query_one("#hardware #measure", Button).focus()
        await pilot.press("home")
        await pilot.pause()
        assert machine.scroll_y == 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert machine.scroll_y > 0

    run_app(app, body)


class TwoModelSession(RecordedSession):
    """The recorded run, where demo:small loads too (the same recorded numbers under another name)."""

    def load(self, source: str, **kwargs):
        if source != "demo:small":
            return super().load(source, **kwargs)
        from tui_support import RecordedModel

        from planner.codec import from_data
        from planner.pipeline.steps import Change
        from planner.results import ModelDescription

        self.load_calls.append({"source": source, **kwargs})
        self.model = RecordedModel({**self.fixture["model"], "name": "small", "source": source})
        self.update(model=from_data(self.model.describe(), ModelDescription))
        self.invalidate(Change.MODEL)
        return self.model


def test_the_profile_log_starts_again_when_another_model_is_loaded(tmp_path):
    from textual.widgets import Input, RichLog

    session = TwoModelSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        log = app.query_one("#profile").query_one("#log", RichLog)
        first = "\n".join(line.text for line in log.lines)
        assert "▶ profile" in first and "baseline p50" in first
        await pilot.press("2")
        app.query_one("#source", Input).value = "demo:small"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question before discarding")
        await pilot.press("y")
        await wait_idle(pilot)
        assert session.results.model.source == "demo:small"
        await pilot.press("4")
        await pilot.pause()
        assert not log.lines  # nothing of the previous model's profile
        await pilot.press("r")
        await wait_idle(pilot)
        lines = "\n".join(line.text for line in log.lines)
        assert lines.count("▶ profile") == 1 and "▶ profile small" in lines

    run_app(app, body)
