"""Step 2, Model: pick a demo, a torchvision model, a file or a decoder LLM folder, set its inputs, and load it."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Label, Select

from planner.codec import to_data
from planner.pipeline.options import flags
from planner.results.values import OutputKind
from planner.results.view import inputs_dynamic_batch, model_inputs
from planner.tui import formatting as fmt
from planner.tui.screens.base import StepPane
from planner.tui.screens.confirm import ConfirmDiscard
from planner.tui.screens.llm import NOT_THE_CNN_STEPS, LlmSettings, facts_rows
from planner.tui.widgets.kv import KeyValues, Row
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.toggles import Tick

SOURCE_HINT = ("demo:NAME · tv:NAME (torchvision) · model.onnx · model.pt2 · model.pt · file.py:factory · "
               "a language model's folder")
INPUTS_PLACEHOLDER = "blank: the model's own · 1x3x224x224"
INPUTS_HINT = "or name:1x128:int64[:0-30522] per input, space-separated"
"""What the Inputs field takes: a shape for one float input, or `--input` specs separated by spaces."""
VAL_DATA_PLACEHOLDER = "images/.wav/.npy folder"
KIND_PLACEHOLDER = "blank: from the shape · 0=dense"
KIND_HINT = f"NAME=KIND · {' '.join(k.value for k in OutputKind)}"  # one line at 80 columns
"""What the Output kind field takes: `--output-kind NAME=KIND` specs, separated by spaces or commas."""
PRESET_DEFAULT = "default"
"""The preset list's first entry: no --val-preset (imagenet for RGB images, unit for greyscale)."""


def split_kinds(text: str) -> list[str]:
    """The Output kind field as `--output-kind` specs: separated by spaces or commas, pasted flags read too
    (`--output-kind 0=dense`, `--output-kind=0=dense`); the engine checks each against the model."""
    specs = [t.removeprefix("--output-kind=") for t in text.replace(",", " ").split()]
    return [t for t in specs if t != "--output-kind"]


def preset_choices() -> list[tuple[str, str]]:
    """The preset list: the default first, then each preset `--val-preset` takes, as (label, value) pairs."""
    choices = dict(flags())["val_preset"].choices
    return [(f"{PRESET_DEFAULT} preset", PRESET_DEFAULT), *((f"{name} preset", name) for name in choices)]


def split_inputs(text: str) -> tuple[str | None, list[str] | None]:
    """The Inputs field as (input_shape, inputs) for `PlanSession.load`; (None, None) when blank.

    A bare shape (`1x3x224x224`) is the one-float-input form; anything with a colon is one or more
    `--input` specs separated by spaces. Pasted command-line flags (`--input a:1x8:int64`,
    `--input=...`, `--input-shape 1x3x32x32`) are read too, so a CLI line can be copied in as it is.
    """
    tokens = text.split()
    if tokens[:1] == ["--input-shape"]:
        return (" ".join(tokens[1:]) or None), None
    specs = [t.removeprefix("--input=") for t in tokens if t != "--input"]
    if not specs:
        return None, None
    if len(specs) == 1 and ":" not in specs[0]:
        return specs[0], None
    # Any malformed spec reaches the engine's parser, whose error names the form and an example.
    return None, specs


def inputs_text(input_shape: str | None, inputs: list[str] | None) -> str:
    """What the Inputs field shows for the command line's `--input-shape` or `--input` values."""
    return " ".join(inputs) if inputs else (input_shape or "")


def input_rows(info: dict) -> list[Row]:
    """Every input of a described model, one row each, then whether the batch may vary."""
    inputs = model_inputs(info)
    if not inputs:
        return [("Inputs", fmt.MISSING)]
    rows: list[Row] = [("Inputs" if n == 0 else "", i.describe()) for n, i in enumerate(inputs)]
    dynamic = info.get("dynamic_batch")
    if not isinstance(dynamic, bool):
        dynamic = inputs_dynamic_batch(inputs)
    if dynamic is not None:
        batch = next((i.shape[0] for i in inputs if i.shape), 1)  # a scalar input (a sample rate) has no batch
        rows.append(("Batch", f"{batch}, " + ("dynamic: the profile sweeps batch sizes" if dynamic
                                              else "fixed by the model: no batch sweep")))
    return rows


def validation_rows(val_data: str | None, val_preset: str | None, output_kinds: tuple[str, ...]) -> list[Row]:
    """What the model was loaded with to be judged on (the engine's state says), as rows; none when nothing was."""
    rows: list[Row] = []
    if val_data:
        rows.append(("Val data", val_data + (f", {val_preset} preset" if val_preset else "")))
    if output_kinds:
        rows.append(("Output kind", ", ".join(output_kinds)))
    return rows


def model_rows(info: dict, flops_per_sample: float | None = None) -> list[Row]:
    """A loaded model's description (`LoadedModel.describe()`) as labelled rows, with its FLOPs once the profile
    has counted them (counting at load would import torch's compiler and delay the model's summary by a second)."""
    rows: list[Row] = [
        ("Model", f"{info.get('name')} ({info.get('kind')})"),
        ("Source", str(info.get("source"))),
        ("Parameters", fmt.count(info.get("parameters"))),
        ("Weights", fmt.size(info.get("size_bytes"))),
        ("FLOPs", f"{fmt.flops(flops_per_sample)} per sample (2 per multiply-add), counted by the profile"
         if flops_per_sample else "counted by the profile (step 4)"),
        *input_rows(info),
        ("Output", "×".join(str(d) for d in info.get("output_shape") or []) or fmt.MISSING),
        ("Runtime", str(info.get("runtime"))),
    ]
    if info.get("onnx_path"):
        rows.append(("ONNX file", str(info["onnx_path"])))
    rows += [("Note", str(note)) for note in info.get("notes") or []]
    return rows


class ModelPane(StepPane):
    """The model source form; loading validates the model (one forward pass) in a worker. A decoder LLM folder
    loaded (and still named in the source field) shows its facts and its plan's settings instead of the other
    models' fields."""

    DEFAULT_CSS = """
    ModelPane .llm-only { display: none; }
    ModelPane.-llm .llm-only { display: block; }
    ModelPane.-llm .cnn-only { display: none; }
    """

    STEP_ID = "model"
    RUN_LABEL = "Load model"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._demo_sources: set[str] = set()
        self._demos_asked = False

    def compose(self) -> ComposeResult:
        """The source form, the Load button and the model's facts."""
        with VerticalScroll():
            yield Label("Demo model", classes="field-label")
            yield Select([], prompt="loading the demo list…", id="demo", compact=True)
            yield Label("Source (or pick a demo above)", classes="field-label")
            yield Input(placeholder="demo:tiny", id="source", compact=True)
            yield Label(SOURCE_HINT, classes="hint")
            yield Notice(id="notice")
            with Horizontal(classes="form-row cnn-only"):
                yield Label("Inputs", classes="row-label")
                yield Input(placeholder=INPUTS_PLACEHOLDER, id="inputs", compact=True)
            yield Label(INPUTS_HINT, classes="hint cnn-only", markup=False)
            with Horizontal(classes="form-row cnn-only"):
                yield Label("Val data", classes="row-label")
                yield Input(placeholder=VAL_DATA_PLACEHOLDER, id="val-data", compact=True)
                yield Select(preset_choices(), value=PRESET_DEFAULT, allow_blank=False, id="val-preset", compact=True)
            with Horizontal(classes="form-row cnn-only"):
                yield Label("Output kind", classes="row-label")
                yield Input(placeholder=KIND_PLACEHOLDER, id="output-kinds", compact=True)
            yield Label(KIND_HINT, classes="hint cnn-only", markup=False)
            yield Tick("trust code (runs the file's own Python)", id="trust", compact=True, classes="cnn-only")
            with Horizontal(classes="toolbar"):
                yield Button("Load (r)", id="load", compact=True)
                yield Label("", id="status", classes="status")
            yield KeyValues([], id="model-info")
            yield LlmSettings(id="llm-settings", classes="llm-only")
            yield Label(NOT_THE_CNN_STEPS, id="llm-note", classes="hint llm-only")

    def on_show(self) -> None:
        """Fetch the demo list in the background the first time this step is shown."""
        self.list_demos()

    def list_demos(self) -> None:
        """Fetch the demo list once, off the UI thread.

        Not at start-up: listing the demos imports torch, and beside the start-up's own load that
        only slows the first model down; after a load torch is imported and the list is instant.
        """
        if not self._demos_asked:
            self._demos_asked = True
            self._demo_list()

    def prefill(self, source: str, input_shape: str | None, trust_code: bool,
                inputs: list[str] | None = None) -> None:
        """Fill the form with the model (and its `--input-shape` or `--input` values) given on the command line."""
        self.query_one("#source", Input).value = source
        self.query_one("#inputs", Input).value = inputs_text(input_shape, inputs)
        self.query_one("#trust", Tick).value = trust_code
        self._match_demo()

    def _match_demo(self) -> None:
        """Show the source in the demo list when it names a demo, else the prompt (without re-filling the form)."""
        select = self.query_one("#demo", Select)
        source = self.query_one("#source", Input).value.strip()
        if not self._demo_sources or select.value == source:
            return  # the list is not in yet (it matches once it is), or it already shows this source
        with self.prevent(Select.Changed):
            if source in self._demo_sources:
                select.value = source
            else:
                select.clear()

    @on(Input.Changed, "#source")
    def _source_typed(self) -> None:
        # The dropdown follows what is typed, so it never names a demo that is not the one to load.
        self._match_demo()
        self._show_llm_form()

    def _show_llm_form(self) -> None:
        """The LLM's settings in place of the other models' fields while the source field names the LLM loaded;
        another source typed brings those fields back, for the model it names."""
        held = self.session.state.llm
        self.set_class(held is not None and self.query_one("#source", Input).value.strip() == held.source, "-llm")

    # -- actions -----------------------------------------------------------------------------
    def run_step(self) -> None:
        """Load the model named in the form (asking first when that throws away measured work)."""
        source = self.query_one("#source", Input).value.strip()
        if not source:
            self.query_one(Notice).show_error("no model source given",
                                              f"pick a demo or type a source: {SOURCE_HINT}")
            return
        lost = self.measured_work_lost(source)
        if lost:
            current = self.session.model.source if self.session.model is not None else "the loaded model"
            self.app.push_screen(ConfirmDiscard(f"Load {source}?", f"Loading it throws away {lost} of {current}. "
                                                f"{self.kept_where()}"),
                                 lambda go: self._load_now(source) if go else None)
            return
        self._load_now(source)

    def measured_work_lost(self, source: str) -> str:
        """What loading `source` would throw away of what was measured (the engine's step graph says which steps
        a change discards), in words; "" when nothing measured would be lost."""
        model = self.session.model
        if model is None:
            return ""
        change = "inputs" if model.source == source else "model"
        discarded = set(self.session.state.discards.get(change, ()))
        measured = max(0, len(self.session.results.candidates) - 1)
        parts = []
        if "profile" in discarded:
            parts.append("the profile")
        if "optimize" in discarded and measured:
            parts.append(f"{measured} measured candidate{'s' if measured != 1 else ''}")
        return " and ".join(parts)

    def kept_where(self) -> str:
        """Whether what would be lost is saved on disk."""
        if self.planner.saved_to is not None:
            return f"Its report and results.json stay in {self.planner.saved_to}."
        return "They are not saved: press n, then s, to save them first."

    def _load_now(self, source: str) -> None:
        shape, inputs = split_inputs(self.query_one("#inputs", Input).value)
        trust = self.query_one("#trust", Tick).value
        # Kept across loads (the form keeps them): a reload, or another model, is judged on the same data.
        preset = self.query_one("#val-preset", Select).value
        judged = {"val_data": self.query_one("#val-data", Input).value.strip() or None,
                  "val_preset": preset if isinstance(preset, str) and preset != PRESET_DEFAULT else None,
                  "output_kinds": split_kinds(self.query_one("#output-kinds", Input).value) or None}
        if self.start("load", self._load, source, shape, inputs, trust, judged):
            self.query_one(Notice).clear()
            self.query_one("#status", Label).update(f"loading {source}…")

    @on(Button.Pressed, "#load")
    @on(Input.Submitted, "#source")
    @on(Input.Submitted, "#inputs")
    @on(Input.Submitted, "#val-data")
    @on(Input.Submitted, "#output-kinds")
    def _load_pressed(self) -> None:
        self.run_step()

    @on(Select.Changed, "#demo")
    def _demo_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#source", Input).value = event.value
            self.query_one("#inputs", Input).value = ""

    # -- workers -----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, name="demos", group="demos")
    def _demo_list(self) -> None:
        # The engine lists them (the demos are torch modules): off the UI thread.
        self.report("demos", self.session.demos())

    @work(thread=True, exclusive=True, exit_on_error=False, name="load", group="model")
    def _load(self, source: str, shape: str | None, inputs: list[str] | None, trust: bool,
              judged: dict[str, Any]) -> None:
        self.report("load", self.session.load(source, input_shape=shape, inputs=inputs, trust_code=trust, **judged))

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
            # The session has discarded what was measured for the previous model: so do the other steps.
            self.query_one("#status", Label).update(f"loaded {result.get('source')}")
            self.planner.model_loaded()
            self.planner.startup_continue("load")
            self.list_demos()

    def job_failed(self, job: str, error: BaseException) -> None:
        """A bad source or input: the engine's problem and fix appear under the source field."""
        if job == "load":
            # The session keeps the model it had (and what was measured for it): say which one that is.
            model, held = self.session.model, self.session.state.llm
            self.query_one("#status", Label).update(
                f"not loaded; still loaded: {model.source} (its steps are kept)" if model is not None else
                f"not loaded; still loaded: {held.source}" if held is not None else "not loaded")
        super().job_failed(job, error)
        if job == "load":
            self.planner.startup_continue("load")
            self.list_demos()

    def sync(self) -> None:
        """Show the loaded model (or decoder LLM), if any."""
        self._show_llm_form()
        model = self.session.model
        info = self.query_one("#model-info", KeyValues)
        llm = self.session.llm
        if llm is not None:
            info.set_rows(facts_rows(llm))
            return
        baseline = self.session.baseline
        state = self.session.state
        info.set_rows(model_rows(to_data(model), baseline.flops_per_sample if baseline is not None else None)
                      + validation_rows(state.val_data, state.val_preset, state.output_kinds)
                      if model is not None else
                      [("Model", "none loaded yet: pick one and press r (or Load)")])
