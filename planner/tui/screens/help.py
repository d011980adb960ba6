"""HelpScreen: the keys, the steps, and how the planner's TUI works."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from planner.tui.steps import STEPS

# What each step does, in one line (the method: profile first, follow the profiling checklist and
# the CPU/GPU/edge decision tree, then measure each candidate against the device-class targets).
STEP_LINES = {
    "hardware": "what this machine is (CPU, GPU, memory) and its peak compute and memory speed, measured once",
    "model": "the model to plan for: a demo (loaded at start) or your file, with its input sizes",
    "requirements": "the latency, throughput, memory, size and accuracy targets (defaults for this kind of device)",
    "profile": "time the model as it is (the baseline): latency percentiles, batch sizes, the slowest layers",
    "checklist": "the profiling checklist, answered from the measurements; a few questions only you can answer",
    "tree": "the decision tree for this target, walked with the evidence; it gives the plan",
    "optimize": "build and measure each planned candidate (runtimes, precisions, threads); quick or full as in step 4",
    "results": "every candidate against the baseline: table, plots, and each one's details",
    "report": "write results.json and report.md to a folder, and read the report here",
}

TERMS = """| Term | Means |
|---|---|
| p50 / p95 | the latency half / 95% of the calls stay under |
| samp/s | samples per second at the best batch size or number of parallel requests |
| 2t, 2x1t | 2 threads; 2 parallel requests of 1 thread each |
| fp32, bf16, int8 | the number format the model computes in (32-bit float, 16-bit brain float, 8-bit integer) |
| QDQ | an INT8 model file with explicit quantize/dequantize steps around each quantized operator |
| nncf, nncf-ac | OpenVINO's INT8 quantizer; "-ac" keeps the layers that lose accuracy in float |
| roofline | the time the hardware's peak compute or memory speed allows: a floor, not a measurement |
| spread | how far apart the middle half of the timed calls are, as a share of the median |
"""


def help_markdown(log_path: str | None = None) -> str:
    """The help text."""
    steps = "\n".join(f"| {s.number} | {s.title}: {STEP_LINES.get(s.id, '')} |" for s in STEPS)
    log = (f"\n\nMessages the measuring processes print go to `{log_path}` instead of the screen."
           if log_path else "")
    return f"""\
# planner: keys

| Key | Does |
|---|---|
| 1–9 | go to a step |
| n / p | next / previous step |
| r | run this step's action (measure, load, profile, continue, optimize, save) |
| c | cancel the running profile, or the optimize (after the current candidate) |
| s | save results.json and report.md (step 9) |
| o | sort the results table by the next column (step 8) |
| [ / ] | previous / next tab (steps 4 and 8) |
| PgUp / PgDn, Home / End | scroll the step on screen (from the step list too) |
| Tab / Shift+Tab | move between controls; Esc returns to the step list |
| Ctrl+P | command palette: steps, actions, themes |
| ? | this help |
| q | quit (asks first while something runs) |

The mouse works everywhere: click steps, buttons, tabs and table headers (to sort).

| Step | |
|---|---|
{steps}

{TERMS}
Every number shown comes from the engine: this machine's detection and measurements.{log}

*Esc, q or ? closes this help.*
"""


class HelpScreen(ModalScreen[None]):
    """A modal help panel."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, log_path: str | None = None) -> None:
        super().__init__()
        self._log_path = log_path

    def compose(self) -> ComposeResult:
        """The help text in a scrollable box."""
        with VerticalScroll(id="help-box"):
            yield Markdown(help_markdown(self._log_path))

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
