"""Step 2, Model: pick a demo, a torchvision model or a file, set the input shape, and load it."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Label, Select

from planner.tui import formatting as fmt
from planner.tui.screens.base import StepPane
from planner.tui.widgets.kv import KeyValues, Row
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.toggles import Tick

SOURCE_HINT = "demo:NAME · tv:NAME (torchvision) · model.onnx · model.pt2 · model.pt · file.py:factory"


def model_rows(info: dict) -> list[Row]:
    """A loaded model's description (`LoadedModel.describe()`) as labelled rows."""
    spec = info.get("input") or {}
    shape = "×".join(str(d) for d in spec.get("shape") or [])
    dynamic = ", dynamic batch" if spec.get("dynamic_batch") else ""
    rows: list[Row] = [
        ("Model", f"{info.get('name')} ({info.get('kind')})"),
        ("Source", str(info.get("source"))),
        ("Parameters", f"{info['parameters']:,}" if isinstance(info.get("parameters"), int) else fmt.MISSING),
        ("Weights", fmt.size(info.get("size_bytes"))),
        ("Input", f"{spec.get('name', 'x')} {shape} {spec.get('dtype', '')}{dynamic}".strip()),
        ("Output", "×".join(str(d) for d in info.get("output_shape") or []) or fmt.MISSING),
        ("Runtime", str(info.get("runtime"))),
    ]
    if info.get("onnx_path"):
        rows.append(("ONNX file", str(info["onnx_path"])))
    rows += [("Note", str(note)) for note in info.get("notes") or []]
    return rows


class ModelPane(StepPane):
    """The model source form; loading validates the model (one forward pass) in a worker."""

    STEP_ID = "model"
    RUN_LABEL = "Load model"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._demo_sources: set[str] = set()

    def compose(self) -> ComposeResult:
        """The source form, the Load button and the model's facts."""
        with VerticalScroll():
            yield Label("Demo model", classes="field-label")
            yield Select([], prompt="loading the demo list…", id="demo", compact=True)
            yield Label("Source (or pick a demo above)", classes="field-label")
            yield Input(placeholder="demo:tiny", id="source", compact=True)
            yield Label(SOURCE_HINT, classes="hint")
            yield Notice(id="notice")
            with Horizontal(classes="form-row"):
                yield Label("Input shape", classes="row-label")
                yield Input(placeholder="blank: the model's own", id="shape", compact=True)
            yield Tick("trust code (runs the file's own Python)", id="trust", compact=True)
            with Horizontal(classes="toolbar"):
                yield Button("Load (r)", id="load", compact=True)
                yield Label("", id="status", classes="status")
            yield KeyValues([], id="model-info")

    def on_mount(self) -> None:
        """Fetch the demo list in the background."""
        self._demo_list()

    def prefill(self, source: str, input_shape: str | None, trust_code: bool) -> None:
        """Fill the form with the model given on the command line."""
        self.query_one("#source", Input).value = source
        self.query_one("#shape", Input).value = input_shape or ""
        self.query_one("#trust", Tick).value = trust_code
        self._match_demo()

    def _match_demo(self) -> None:
        """Show the source in the demo list when it names a demo (without re-filling the form)."""
        select = self.query_one("#demo", Select)
        source = self.query_one("#source", Input).value.strip()
        if source in self._demo_sources:
            with self.prevent(Select.Changed):
                select.value = source

    # -- actions -----------------------------------------------------------------------------
    def run_step(self) -> None:
        """Load the model named in the form."""
        source = self.query_one("#source", Input).value.strip()
        shape = self.query_one("#shape", Input).value.strip() or None
        trust = self.query_one("#trust", Tick).value
        if not source:
            self.query_one(Notice).show_error("no model source given",
                                              f"pick a demo or type a source: {SOURCE_HINT}")
            return
        if self.start("load", self._load, source, shape, trust):
            self.query_one(Notice).clear()
            self.query_one("#status", Label).update(f"loading {source}…")

    @on(Button.Pressed, "#load")
    @on(Input.Submitted, "#source")
    @on(Input.Submitted, "#shape")
    def _load_pressed(self) -> None:
        self.run_step()

    @on(Select.Changed, "#demo")
    def _demo_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#source", Input).value = event.value
            self.query_one("#shape", Input).value = ""

    # -- workers -----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, name="demos", group="demos")
    def _demo_list(self) -> None:
        # Importing the demos imports torch (seconds), so it happens off the UI thread.
        from planner.models.demo import DEMOS

        self.report("demos", [(f"demo:{d.name} — {d.summary}", f"demo:{d.name}") for d in DEMOS.values()])

    @work(thread=True, exclusive=True, exit_on_error=False, name="load", group="model")
    def _load(self, source: str, shape: str | None, trust: bool) -> None:
        model = self.session.load(source, input_shape=shape, trust_code=trust)
        self.report("load", model.describe())

    # -- results -----------------------------------------------------------------------------
    def job_done(self, job: str, result: Any) -> None:
        """Fill the demo list, or show the loaded model."""
        if job == "demos":
            select = self.query_one("#demo", Select)
            with self.prevent(Select.Changed):
                select.set_options(result)
            select.prompt = "pick a demo model"
            self._demo_sources = {value for _, value in result}
            self._match_demo()
        elif job == "load":
            self.query_one("#status", Label).update(f"loaded {result.get('source')}")
            self.planner.model_loaded()

    def job_failed(self, job: str, error: BaseException) -> None:
        """A bad source or shape: the engine's problem and fix appear under the source field."""
        if job == "load":
            self.query_one("#status", Label).update("not loaded")
        super().job_failed(job, error)

    def sync(self) -> None:
        """Show the loaded model, if any."""
        model = self.session.model
        info = self.query_one("#model-info", KeyValues)
        info.set_rows(model_rows(model.describe()) if model is not None else
                      [("Model", "none loaded yet: pick one and press r (or Load)")])
