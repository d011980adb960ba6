"""The TUI and a model's inputs: the Model step's Inputs field (a shape or `--input` specs), the command
line's inputs prefilled into it, every input in the model panel, and a text model's profile at 80×24."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Label
from tui_support import PlannerApp, TextRecordedSession, drive, run_app, screen_text, wait_idle

from planner.results import Baseline, from_data
from planner.tui import app as app_module
from planner.tui.screens.model import model_rows, split_inputs
from planner.tui.screens.profile import latency_rows, throughput_chart

TEXT_SPECS = ["input_ids:1x64:int64:0-1000", "attention_mask:1x64:int64"]


@pytest.mark.parametrize(("typed", "expected"), [
    ("", (None, None)),
    ("   ", (None, None)),
    ("1x3x224x224", ("1x3x224x224", None)),
    ("input_ids:1x128:int64:0-1000 attention_mask:1x128:int64",
     (None, ["input_ids:1x128:int64:0-1000", "attention_mask:1x128:int64"])),
    ("x:1x3x32x32", (None, ["x:1x3x32x32"])),
    # A command line pasted as it is.
    ("--input input_ids:1x8:int64 --input=attention_mask:1x8:int64",
     (None, ["input_ids:1x8:int64", "attention_mask:1x8:int64"])),
    ("--input-shape 1x3x32x32", ("1x3x32x32", None)),
])
def test_inputs_field_is_a_shape_or_input_specs(typed, expected):
    assert split_inputs(typed) == expected


def test_model_panel_reads_an_older_single_input_description():
    older = {"name": "tiny", "kind": "demo", "source": "demo:tiny", "parameters": 1578, "size_bytes": 6384,
             "input": {"name": "x", "shape": [1, 3, 32, 32], "dtype": "float32", "dynamic_batch": True},
             "output_shape": [1, 10], "runtime": "torch"}
    rows = dict(model_rows(older))
    assert rows["Inputs"] == "x float32 [batch=1, 3, 32, 32]"
    assert rows["Batch"] == "1, dynamic: the profile sweeps batch sizes"


def text_app(tmp_path, **kwargs) -> PlannerApp:
    return PlannerApp(model=TextRecordedSession.SOURCE, session=TextRecordedSession(), out_dir=tmp_path / "out",
                      **kwargs)


def test_command_line_inputs_are_prefilled_and_loaded(tmp_path):
    app = text_app(tmp_path, inputs=TEXT_SPECS)

    async def body(pilot):
        await drive(pilot, "model")
        assert app.query_one("#inputs", Input).value == " ".join(TEXT_SPECS)
        assert app.served.load_calls[0]["inputs"] == TEXT_SPECS
        assert app.served.load_calls[0]["input_shape"] is None
        # Every input in the model panel, with its dtype, named axes and values, inside 80×24 (below the form: the
        # step scrolls to it).
        app.query_one("#model VerticalScroll").scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert "Inputs         input_ids int64 [1, sequence=64], values" in text
        assert "attention_mask int64 [1, sequence=64]," in text and "values ones (nothing masked)" in text
        assert "Batch          1, fixed by the model: no batch sweep" in text
        assert "Runtime        onnxruntime" in text

    run_app(app, body)


def test_typed_input_specs_go_to_the_load(tmp_path):
    app = text_app(tmp_path)

    async def body(pilot):
        await drive(pilot, "model")
        field = app.query_one("#inputs", Input)
        assert field.value == ""
        field.value = "input_ids:1x32:int64:0-500 attention_mask:1x32:int64"
        await pilot.press("r")
        await wait_idle(pilot)
        assert app.served.load_calls[-1]["inputs"] == ["input_ids:1x32:int64:0-500", "attention_mask:1x32:int64"]
        field.value = "1x3x32x32"
        await pilot.press("r")
        await wait_idle(pilot)
        assert app.served.load_calls[-1]["input_shape"] == "1x3x32x32"
        assert app.served.load_calls[-1]["inputs"] is None

    run_app(app, body)


def test_text_model_profile_shows_sequence_sweep_and_why_batch_is_not_swept(tmp_path):
    app = text_app(tmp_path, inputs=TEXT_SPECS)

    async def body(pilot):
        await drive(pilot, "profile")
        rows = dict(latency_rows(app.session.baseline))
        assert rows["Throughput"].startswith("5,386 samples/s at batch 1, not swept: the model's inputs fix the "
                                             "batch at 1 (input_ids int64")
        text = screen_text(app)
        assert "Throughput     5,386 samples/s at batch 1, not swept: the" in text
        assert "Sequence       8: 0.21 ms · 16: 0.3 ms · 32: 0.46 ms · 64:" in text
        assert "Tokens/s       best 95,522 tokens/s at 64 tokens" in text
        await pilot.press("]", "]")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "Baseline throughput against sequence length" in text
        note = app.query_one("#sweep-note", Label)
        assert note.display and "No batch sweep: the model's inputs fix the batch at 1" in str(note.render())

    run_app(app, body)


def test_image_model_profile_keeps_the_batch_chart(recorded_session):
    baseline = from_data(recorded_session.fixture["baseline"], Baseline)
    xs, _, title, xlabel, _ = throughput_chart(baseline)
    assert title == "Baseline throughput against batch size" and xlabel == "batch" and xs == [1, 2, 4]
    labels = [label for label, _ in latency_rows(baseline)]
    assert "Sequence" not in labels and "Tokens/s" not in labels


def test_run_tui_passes_the_command_line_inputs_to_the_app(monkeypatch):
    made: dict = {}

    class FakeApp:
        def __init__(self, **kwargs):
            made.update(kwargs)

        def run(self):
            return 0

    monkeypatch.setattr(app_module, "PlannerApp", FakeApp)
    assert app_module.run_tui(model="text.onnx", input_shape=None, trust_code=False, inputs=TEXT_SPECS) == 0
    assert made["inputs"] == TEXT_SPECS and made["model"] == "text.onnx"


def test_demo_list_waits_for_the_start_up_load(tmp_path):
    from textual.widgets import Select
    from tui_support import RecordedSession, wait_for, wait_idle

    session = RecordedSession()
    app = PlannerApp(model="demo:tiny", session=session, out_dir=tmp_path / "out")

    async def body(pilot):
        pane = app.query_one("#model")
        assert not pane._demos_asked  # listing imports torch: not beside the start-up's own load
        await wait_for(pilot, lambda: session.model is not None, 60, "the start-up load")
        await wait_idle(pilot)
        select = app.query_one("#demo", Select)
        await wait_for(pilot, lambda: any("demo:tiny" in str(v) for _, v in select._options), 60, "the demo list")

    run_app(app, body)
