"""Keys and fields as a newcomer meets them (issue 38): a number field refuses letters, letters typed in a field
never run commands, the focused control is drawn so it can be seen, and ↓ from the Results tab bar reaches the
rows."""

from __future__ import annotations

from textual.widgets import DataTable, Input, Label
from tui_support import PlannerApp, RecordedSession, drive, run_app


def test_a_number_field_refuses_letters_and_they_run_no_command(tmp_path):
    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "requirements")
        field = app.query_one("#req-latency_ms", Input)
        field.value = "1"
        field.focus()
        await pilot.press("end")  # focusing selects the text: typing would replace it
        await pilot.pause()
        # n is "next step", 5 a step, r "run", q "quit" outside a field; in it, letters are refused, digits typed.
        await pilot.press("n", "r", "q", "5")
        await pilot.pause()
        assert field.value == "15" and app.current == "requirements" and app.is_running
        assert session.requirements.latency_ms == 15
        assert not app.query_one("#err-latency_ms").display

    run_app(app, body)


def test_the_focused_field_and_table_are_drawn_apart_from_the_rest(tmp_path):
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        assert not table.styles.outline_left[0]
        table.focus()
        await pilot.pause()
        assert table.styles.outline_left[0] == "outer"  # an accent bar down its left edge
        await pilot.press("3")
        app.query_one("#req-memory_mb", Input).focus()
        await pilot.pause()
        labels = {str(label.render()): label for label in app.query("#requirements .row-label").results(Label)}
        focused, other = labels["Memory (MiB)"], labels["Latency (ms)"]
        # The focused field's row label is highlighted in the accent colour; the others are not.
        assert focused.rich_style.bgcolor != other.rich_style.bgcolor
        assert focused.rich_style.bgcolor is not None and focused.rich_style.bold

    run_app(app, body)


def test_down_from_the_results_tab_bar_moves_through_the_rows(tmp_path):
    app = PlannerApp(model="demo:tiny", session=RecordedSession(), out_dir=tmp_path / "out")

    async def body(pilot):
        from textual import events
        from textual.widgets import Tabs

        await drive(pilot, "results")
        table = app.query_one("#candidates", DataTable)
        await pilot.press("tab")  # from the step list: the tab bar
        await pilot.pause()
        assert isinstance(app.focused, Tabs)
        await pilot.press("down")
        await pilot.pause()
        assert app.focused is table and table.cursor_row == 0
        await pilot.press("down")
        await pilot.pause()
        assert table.cursor_row == 1
        # Keys a terminal delivers in one burst (tmux send-keys Down Down Down): each ↓ after the first moves a row,
        # none is spent on the tab bar while the focus is still moving.
        await pilot.press("shift+tab")
        await pilot.pause()
        assert isinstance(app.focused, Tabs)
        for _ in range(3):
            app.post_message(events.Key("down", None))
        await pilot.pause()
        assert app.focused is table and table.cursor_row == 3

    run_app(app, body)
