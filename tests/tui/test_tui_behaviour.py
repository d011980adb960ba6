"""Behaviour of the TUI: errors in place, the size guard, quitting during a run, cancel, palette, help."""

from __future__ import annotations

import threading

from textual.widgets import DataTable, Input, Label, RichLog
from tui_support import (
    PlannerApp,
    RecordedSession,
    drive,
    run_app,
    screen_text,
    wait_for,
    wait_idle,
)

from planner.events import Event
from planner.tui.app import DEFAULT_MODEL
from planner.tui.bridge import EventBridge
from planner.tui.screens.confirm import ConfirmQuit
from planner.tui.screens.help import HelpScreen
from planner.tui.screens.too_small import TooSmallScreen
from planner.tui.widgets.notice import Notice


def recorded_app(session: RecordedSession, tmp_path) -> PlannerApp:
    return PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")


def test_bad_model_source_shows_the_error_under_the_input(tmp_path):
    app = PlannerApp(model="demo:no-such-model", autostart=False, out_dir=tmp_path)

    async def body(pilot):
        await pilot.press("2", "r")
        pane = app.query_one("#model")
        notice = pane.query_one("#notice", Notice)
        await wait_for(pilot, lambda: notice.display, 120, "the load error")
        text = str(notice.render())
        assert "Error:" in text and "no-such-model" in text and "Fix:" in text
        # In place: the notice is the source field's next-but-one sibling (after its hint line).
        siblings = list(pane.query_one("#source", Input).parent.children)
        assert siblings.index(notice) == siblings.index(pane.query_one("#source")) + 2
        assert app.session.model is None and app.is_running

    run_app(app, body)


def test_terminal_smaller_than_80x24_shows_a_message(tmp_path):
    app = PlannerApp(model="demo:tiny", autostart=False, out_dir=tmp_path)

    async def body(pilot):
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        text = screen_text(app)
        assert "Terminal too small:" in text and "enlarge to at least 80×24 (now 60×20)" in text
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not isinstance(app.screen, TooSmallScreen)
        assert "1 Hardware" in screen_text(app)
        await pilot.press("question_mark")  # a modal open when the terminal shrinks is covered too
        await pilot.resize_terminal(70, 24)
        await pilot.pause()
        assert "(now 70×24)" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)

    run_app(app, body, size=(60, 20))


def test_q_during_a_run_asks_first_and_stay_keeps_running(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the profile to start")
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmQuit)
        assert "Profiling is still running" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmQuit) and app.is_running and app.job is not None
        session.gate.set()
        await wait_idle(pilot)
        await pilot.press("q")  # nothing runs now: quits without asking
        await pilot.pause()
        assert not app.is_running

    run_app(app, body)
    assert app.return_value == 0


def test_a_run_that_ends_under_a_modal_updates_the_steps(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the profile to start")
        await pilot.press("question_mark")
        await pilot.pause()
        session.gate.set()
        await wait_idle(pilot)
        assert isinstance(app.screen, HelpScreen) and app.is_running
        await pilot.press("escape")
        await pilot.pause()
        assert "✓ 4 Profile" in screen_text(app)

    run_app(app, body)


def test_quitting_during_a_run_stops_it(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the profile to start")
        await pilot.press("q", "y")
        await pilot.pause()
        assert session.cancel.cancelled
        session.gate.set()

    run_app(app, body)
    assert app.return_value == 0


def test_cancel_stops_optimize_after_the_current_candidate(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "optimize")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the optimize to start")
        await pilot.press("c")
        assert session.cancel.cancelled
        session.gate.set()
        await wait_idle(pilot)
        pane = app.query_one("#optimize")
        log = "\n".join(line.text for line in pane.query_one(RichLog).lines)
        assert "cancel requested" in log and "cancelled: 1 candidate measured, 7 not reached" in log
        assert len(session.results.candidates) == 2  # the baseline and the candidate in progress
        assert "cancelled" in str(pane.query_one("#status", Label).render())

    run_app(app, body)


def test_a_failing_worker_shows_an_error_and_the_app_keeps_running(tmp_path):
    session = RecordedSession()
    session.fail_profile = RuntimeError("the measuring process vanished")
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        await pilot.press("r")
        await wait_idle(pilot)
        notice = app.query_one("#profile").query_one("#notice", Notice)
        assert notice.display and "the measuring process vanished" in str(notice.render())
        assert app.is_running and app.job is None and session.baseline is None

    run_app(app, body)


def test_invalid_requirement_is_explained_under_its_field(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "requirements")
        field = app.query_one("#req-latency_ms", Input)
        field.value = "fast"
        await pilot.pause()
        error = app.query_one("#err-latency_ms", Notice)
        # The field by its name on screen, never the engine's key; blank (not "none") is how the form says no target.
        text = str(error.render())
        assert error.display and "Latency (ms)" in text and "latency_ms" not in text
        assert "or blank for no target" in text
        field.value = "20"
        await pilot.pause()
        assert not error.display
        assert session.requirements.latency_ms == 20
        assert "set here" in str(app.query_one("#src-latency_ms", Label).render())

    run_app(app, body)


def test_unwritable_report_folder_is_an_error_in_place(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")

    async def body(pilot):
        await drive(pilot, "profile")  # a baseline exists, so there is something to save
        await pilot.press("9")
        app.query_one("#out-dir", Input).value = str(blocker / "sub")
        await pilot.press("s")
        await wait_idle(pilot)
        notice = app.query_one("#report").query_one("#notice", Notice)
        assert notice.display and "cannot write to output folder" in str(notice.render())
        assert "not saved" in str(app.query_one("#saved", Label).render())

    run_app(app, body)


def test_results_sort_by_header_click_and_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        candidates = session.results.candidates
        first = int(table.coordinate_to_cell_key((0, 0)).row_key.value)
        assert first == min(range(len(candidates)), key=lambda i: candidates[i].latency_ms.p50_ms)
        # Click the best/s header: the highest throughput comes first.
        keys = [col.key.value for col in table.ordered_columns]
        x = sum(col.get_render_width(table) for col in table.ordered_columns[:keys.index("rate")]) + 2
        await pilot.click("#candidates", offset=(x, 0))
        await pilot.pause()
        assert "sorted by throughput ↓" in str(app.query_one("#sorted", Label).render())
        top = int(table.coordinate_to_cell_key((0, 0)).row_key.value)
        rates = [peak.samples_per_s if (peak := c.peak_rate()) else 0.0 for c in candidates]
        assert rates[top] == max(rates)
        await pilot.press("o")  # the next shown column: at 80 columns memory is dropped (it is in the details)
        assert "sorted by speedup" in str(app.query_one("#sorted", Label).render())

    run_app(app, body)


def test_command_palette_goes_to_a_step(tmp_path):
    app = recorded_app(RecordedSession(), tmp_path)

    async def body(pilot):
        await drive(pilot, "hardware")
        titles = [title for title, _, _ in app.palette_commands()]
        assert "Go to: Results" in titles and "Run profile" in titles and "Save report" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"go to: results")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.current == "results"

    run_app(app, body)


def test_help_opens_and_closes(tmp_path):
    app = recorded_app(RecordedSession(), tmp_path)

    async def body(pilot):
        await drive(pilot, "hardware")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "next / previous step" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)

    run_app(app, body)


def test_sidebar_marks_finished_steps(tmp_path):
    app = recorded_app(RecordedSession(), tmp_path)

    async def body(pilot):
        await drive(pilot, "checklist")
        text = screen_text(app)
        assert "✓ 1 Hardware" in text and "✓ 4 Profile" in text and "· 5 Checklist" in text
        await pilot.press("r")  # Continue: plan with the answers, and go to the tree
        await pilot.pause()
        assert app.current == "tree" and "✓ 5 Checklist" in screen_text(app)

    run_app(app, body)


def test_no_color_is_left_to_textual(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = recorded_app(RecordedSession(), tmp_path)
    assert app.no_color

    async def body(pilot):
        await drive(pilot, "optimize")
        # Ticked items read without colour: ✓ in the box.
        assert "▐✓▌" in screen_text(app)

    run_app(app, body)


def test_default_model_is_the_engines_default_demo():
    from planner.models.demo import DEFAULT_DEMO

    assert DEFAULT_MODEL == DEFAULT_DEMO


class _Recorder:
    def __init__(self) -> None:
        self.messages: list = []

    def post_message(self, message) -> bool:
        self.messages.append(message)
        return True


def test_bridge_coalesces_events_into_few_messages():
    bridge = EventBridge()
    target = _Recorder()
    bridge.attach(target)  # type: ignore[arg-type]

    def chatter() -> None:
        for i in range(500):
            bridge(Event("log", f"line {i}"))

    thread = threading.Thread(target=chatter)
    thread.start()
    thread.join()
    assert len(target.messages) == 1  # one message in flight carries them all
    events = target.messages[0].drain()
    assert [e.message for e in events] == [f"line {i}" for i in range(500)]
    bridge(Event("stage", "next"))
    assert len(target.messages) == 2
    bridge.attach(None)
    bridge(Event("log", "dropped"))
    assert len(target.messages) == 2


def test_rerunning_optimize_replaces_the_previous_candidates(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "results")
        first = [c.label for c in session.results.candidates]
        await pilot.press("7", "r")
        await pilot.pause()
        await wait_idle(pilot)
        labels = [c.label for c in session.results.candidates]
        assert labels == first and len(set(labels)) == len(labels)
        await pilot.press("8")
        await wait_idle(pilot)
        table = app.query_one("#candidates", DataTable)
        assert table.row_count == len(first)
        # A cancelled third run counts what it measured, not what the earlier runs did.
        session.gate = threading.Event()
        await pilot.press("7", "r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the third run to start")
        await pilot.press("c")
        session.gate.set()
        await wait_idle(pilot)
        log = "\n".join(line.text for line in app.query_one("#optimize").query_one(RichLog).lines)
        assert "cancelled: 1 candidate measured, 7 not reached" in log
        assert len(session.results.candidates) == 2
        assert sum(w.startswith("cancelled before") for w in session.results.warnings) == 1

    run_app(app, body)


def test_an_either_or_question_is_answered_with_its_alternatives(tmp_path):
    from textual.widgets import Select

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        await pilot.press("5")
        await pilot.pause()
        select = app.query_one("#reply-cpu-preprocessing", Select)
        offered = [str(prompt) for prompt, _ in select._options if _ is not Select.BLANK]
        assert "the model itself" in offered and "the work around it" in offered
        assert "yes" not in offered and "no" not in offered
        select.value = "the work around it"
        await pilot.press("r")
        await pilot.pause()
        answer = next(a for a in session.answers if a.question.id == "cpu.preprocessing")
        # The report records the alternative chosen, and the tree reads it as "the work around it".
        assert answer.answer == "the work around it" and answer.value is True
        recorded = next(c for c in session.results.checklist if c.id == "cpu.preprocessing")
        assert recorded.answer == "the work around it"

    run_app(app, body)


def test_c_cancels_a_running_profile(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the profile to start")
        await pilot.press("c")
        assert session.cancel.cancelled
        session.gate.set()
        await wait_idle(pilot)
        pane = app.query_one("#profile")
        assert "cancelled" in str(pane.query_one("#status", Label).render())
        log = "\n".join(line.text for line in pane.query_one(RichLog).lines)
        assert "cancel requested" in log and "failed" not in log
        assert not [n for n in app._notifications if n.severity == "error"]
        # A new profile is not stopped by the earlier cancel.
        session.gate = None
        await pilot.press("r")
        await pilot.pause()
        await wait_idle(pilot)
        assert session.baseline is not None and not session.cancel.cancelled

    run_app(app, body)


def test_busy_message_offers_c_only_for_jobs_it_stops(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "profile")
        session.gate = threading.Event()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.job is not None, 10, "the profile to start")
        assert app.check_action("cancel_run", ()) is True
        await pilot.press("r")
        await pilot.pause()
        busy = [n.message for n in app._notifications if n.title == "Busy"]
        assert busy and "press c to cancel it" in busy[-1]
        session.gate.set()
        await wait_idle(pilot)

    run_app(app, body)


def test_report_preview_goes_stale_when_requirements_change_or_optimize_reruns(tmp_path):
    from planner.tui.screens.report import NOT_SAVED_HINT

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "report")
        assert "report" in app.main.query_one("StepList").done
        app.session.set_requirements(overrides={"latency_ms": "5"})
        app.requirements_changed()
        await pilot.pause()
        assert app.saved_to is None and "report" not in app.main.query_one("StepList").done
        saved = str(app.query_one("#report #saved", Label).render())
        assert "changed since the last save" in saved
        assert app.query_one("#report-md").source == NOT_SAVED_HINT
        await pilot.press("s")
        await wait_idle(pilot)
        assert app.saved_to is not None
        await pilot.press("7", "r")
        await pilot.pause()
        await wait_idle(pilot)
        assert app.saved_to is None and "report" not in app.main.query_one("StepList").done

    run_app(app, body)


def test_too_small_screen_lets_nothing_open_over_it(tmp_path):
    app = PlannerApp(model="demo:tiny", autostart=False, out_dir=tmp_path)

    async def body(pilot):
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.press("question_mark", "ctrl+p", "n")
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not any(isinstance(s, TooSmallScreen) for s in app.screen_stack)
        assert "1 Hardware" in screen_text(app)

    run_app(app, body, size=(60, 20))


def test_tree_says_yes_when_threads_equal_the_cores(tmp_path):
    from textual.widgets import OptionList

    from planner.tui.screens.tree import TreePane

    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "tree")
        pane = app.query_one(TreePane)
        tree = pane.query_one(OptionList)
        # Each node's text, and its label as drawn (wrapped to 80 columns, the decision at its end).
        labels = [(str(node.text), tree.get_option_at_index(i).prompt.plain) for i, node in enumerate(pane.nodes)]
        threads = next(label for text, label in labels if "physical cores?" in text)
        assert threads.endswith("→ yes"), threads

    run_app(app, body)


def test_saving_again_says_it_overwrote(tmp_path):
    session = RecordedSession()
    app = recorded_app(session, tmp_path)

    async def body(pilot):
        await drive(pilot, "report")
        assert "overwrote" not in str(app.query_one("#report #saved", Label).render())
        await pilot.press("s")
        await pilot.pause()
        await wait_idle(pilot)
        assert "(overwrote the earlier save)" in str(app.query_one("#report #saved", Label).render())

    run_app(app, body)
