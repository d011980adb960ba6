"""HelpScreen: the keys, the steps, and how the planner's TUI works."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from planner.results import Status, energy_view
from planner.results.status_look import look
from planner.tui.formatting import ABBREVIATION_MEANING
from planner.tui.steps import STEPS

# What each step does, in one line (the method: profile first, follow the profiling checklist and
# the CPU/GPU/edge decision tree, then measure each candidate against the device-class targets).
STEP_LINES = {
    "hardware": "what this machine is (CPU, GPU, memory) and its peak compute and memory speed, measured once",
    "model": "the model to plan for: a demo (loaded at start) or your file, with its input sizes; or a language "
             "model's folder, with its prompt lengths and new tokens per call",
    "requirements": "the latency, throughput, memory, size and accuracy targets (defaults for this kind of device)",
    "profile": "time the model as it is (the baseline): latency percentiles, batch sizes, the slowest layers",
    "checklist": "the profiling checklist, answered from the measurements; a few questions only you can answer",
    "tree": "the decision tree for this target, walked with the evidence; it gives the plan",
    "optimize": "build and measure each planned candidate (runtimes, precisions, threads); quick or full as in step 4; "
                "for a language model's folder, its whole plan in one run",
    "results": "every candidate against the baseline: table, plots, and each one's details",
    "report": "write results.json and report.md to a folder, and read the report here (a language model's plan "
              "writes its own)",
}

STATUS_MEANING = {
    Status.OK: "measured, and its outputs match the original's",
    Status.REJECTED: "rejected: measured, but its outputs drift from the original's beyond the fidelity check",
    Status.UNCONFIRMED: "unconfirmed: it drifted from the original on generated inputs only; whether that matters "
                        "shows only on your data",
    Status.FAILED: "failed to build or run (the details say why)",
    Status.SKIPPED: "skipped (the details say why)",
    Status.PARTIAL: "partly measured",
}
"""What each status means, by the short word the status column shows (planner.results.status_look)."""

GLOSSARY: tuple[tuple[tuple[str, ...], str], ...] = (
    (("p50", "p90", "p95", "p99"), "the latency half, 90%, 95%, 99% of the calls stay under"),
    (("ms",), "milliseconds"),
    (("#",), "the rank the report gives (— where the candidate is not ranked)"),
    (("samp/s",), "samples per second at the best batch size or number of parallel requests"),
    (("speed",), "speedup over the baseline: 2x is twice as fast, 0.5x half as fast"),
    (("pred", "✓", "↑", "↓"), "the speedup predicted before measuring, as a band ('1.5-4'): ✓ the measurement "
                              "fell inside it, ↑ above it, ↓ below it"),
    (("stat",), "the candidate's status: the words below"),
    *(((look(status).short,), words) for status, words in STATUS_MEANING.items()),
    (("meets",), "meets every requirement you set (step 3)"),
    (("met at p50",), "the latency target's percentile was not measured (too few samples): the median (p50) met "
                      "it, which is all that can be said"),
    (("miss", "rate", "mem", "size", "acc"), "'miss p95,mem': the requirements you set that the row misses: latency "
                                             "at that percentile (p50 where its own was not measured), throughput, "
                                             "memory, model size, accuracy"),
    ((energy_view.SHORT_HEADER,), "millijoules of energy per inference"),
    (("<res", "inval", "n/a", "n/cov", "n/rec"), "no energy figure: below the counter's resolution, not valid, no "
                                                 "counter here, the counter does not cover this device, not recorded"),
    *(((short,), words) for short, words in ABBREVIATION_MEANING.items()),
    (("2t", "2x1t"), "2 threads; 2 parallel requests of 1 thread each"),
    (("all", "basic", "seq"), "ONNX Runtime's graph optimizations (all of them, or the basic ones) and its "
                              "sequential execution (one operator at a time)"),
    (("fp32", "FP32", "f32", "F32", "fp16", "FP16", "bf16", "int8", "INT8"),
     "the number format the model computes in: 32-bit float (OpenVINO writes f32, safetensors F32), 16-bit float, "
     "16-bit brain float, 8-bit integer"),
    (("QDQ",), "an INT8 model file with explicit quantize/dequantize steps around each quantized operator"),
    (("nncf", "nncf-ac"), "OpenVINO's INT8 quantizer; '-ac' keeps the layers that lose accuracy in float"),
    (("KiB", "MiB", "GiB"), "memory in binary units: 1 KiB = 1,024 bytes, 1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB"),
    (("kB", "MB", "GB"), "bytes in decimal units, as data moved and bandwidth (GB/s) are counted: 1 kB = 1,000 "
                         "bytes, 1 MB = 1,000 kB, 1 GB = 1,000 MB"),
    (("FLOP", "FLOPs", "kFLOP", "MFLOP", "GFLOP", "FLOP/B"),
     "floating-point operations (a multiply-add counts 2), thousands, millions and billions of them, and operations "
     "per byte moved"),
    (("GEMM",), "a general matrix multiplication: the kernel under linear and convolution layers"),
    (("MAC",), "a multiply-accumulate: one multiplication and one addition"),
    (("roofline",), "the time the hardware's peak compute or memory speed allows: a floor, not a measurement"),
    (("spread",), "how far apart the middle half of the timed calls are, as a share of the median"),
    (("RSS",), "resident set size: the memory a process holds in RAM"),
    (("CPU", "CPUs", "GPU", "GPUs"), "the processor (its cores); the graphics card"),
    (("ISA", "AVX2", "AVX-512", "FMA", "F16C", "VNNI", "AMX", "BF16"),
     "the CPU's instruction set extensions: wide vector units (AVX2, AVX-512), fused multiply-add (FMA), 16-bit "
     "float conversion (F16C), 8-bit dot products (VNNI), matrix tiles (AMX), brain-float arithmetic (BF16)"),
    (("L1d", "L1i", "L2", "L3"), "the CPU's caches: level 1 for data and for instructions, levels 2 and 3"),
    (("MHz",), "the CPU's clock, in millions of cycles per second"),
    (("RAPL",), "Running Average Power Limit: the energy counter of x86 CPUs that Linux exposes"),
    (("MKLDNN",), "Intel's optimized CPU kernels (now oneDNN), which PyTorch uses"),
    (("OS",), "the operating system"),
    (("VM",), "a virtual machine"),
    (("CNN",), "a convolutional neural network"),
    (("LLM",), "a large language model: here a decoder, which writes text one token after another"),
    (("TTFT",), "time to first token: how long a prompt takes to answer with its first token (the prompt's "
                "processing)"),
    (("TPOT",), "time per output token: the time between generated tokens, once the first is out"),
    (("GGUF",), "llama.cpp's model file format, which holds the weights already quantized (Q8_0, Q4_K_M...)"),
    (("KL",), "the Kullback-Leibler divergence: how far a candidate's next-token probabilities are from the "
              "original's, in nats per token (0: the same)"),
)
"""Every abbreviation and short word the steps show, with what it means (the help lists them all)."""


def glossed() -> set[str]:
    """The terms the glossary explains."""
    return {term for terms, _ in GLOSSARY for term in terms}


def glossary_markdown() -> str:
    """The glossary as a Markdown table."""
    rows = "\n".join(f"| {', '.join(terms)} | {words} |" for terms, words in GLOSSARY)
    return f"| Term | Means |\n|---|---|\n{rows}\n"


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
| r | run this step's action (measure, load, profile, continue, optimize, save; the LLM plan, see below) |
| c | cancel the running profile, or the optimize or LLM plan (after the current candidate) |
| s | save results.json and report.md (step 9) |
| o | sort the results table by the next column (step 8) |
| [ / ] | previous / next tab (steps 4 and 8) |
| PgUp / PgDn, Home / End | scroll the step on screen (from the step list too) |
| Tab / Shift+Tab | move between controls (the focused one is drawn in the accent colour); Esc: the step list |
| typing | goes into the field with the focus; outside a field, letters are the keys above |
| Ctrl+P | command palette: steps, actions, themes |
| ? | this help |
| q | quit (asks first while something runs) |

The mouse works everywhere: click steps, buttons, tabs and table headers (to sort).

A decoder language model's folder (its config.json names a `…ForCausalLM` architecture) is planned in one run: step 2
loads it and shows its facts, with the prompt lengths and new tokens per call; step 7's r runs the LLM plan (the
read roof, then each runtime's candidates timed token by token: TTFT, TPOT, tokens/s, and fidelity to the original),
and c stops it after the current candidate with what was measured written; step 9 shows its report. Profile,
Checklist and Decision tree (steps 4–6) do not apply to it.

| Step | |
|---|---|
{steps}

Words and abbreviations on the screens:

{glossary_markdown()}
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
