"""What `planner plan` is asked to do, declared once: each option is one field with its flag, help and type.

The command line's flags (`planner plan`, `plan --host`, `fleet`, and the model flags `inspect`, `profile` and
`bench` share), the engine's `plan` command (the codec carries the fields as they are) and what an SSH run does
with a local file (`carry`) are all read from these declarations (planner.cli.plan_args, planner.ssh.remote_plan).
A new option is one field here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable


class Carry(StrEnum):
    """What a plan on a host over SSH does with an option that names a local file."""

    AS_IS = "as-is"  # nothing to carry (a number, a name, a demo)
    MODEL = "model"  # the model source: a local file is shipped into the host's cache; demos and names are not
    SHIP = "ship"  # a local file, shipped into the host's cache
    HOST_OUT = "host-out"  # the output folder: the run's own folder on the host, fetched back here
    REFUSED = "refused"  # a local file not carried yet: refused before connecting, with what to do instead


@dataclass(frozen=True)
class Flag:
    """How one option appears on the command line."""

    names: tuple[str, ...]  # "--val-data" (and a short form, if any)
    help: str = ""
    parse: Callable[[str], Any] | None = None  # text to the flag's value (ValueError says what is wrong)
    convert: Callable[[Any], Any] | None = None  # the flag's value(s) to the field's (a list to a tuple, a split)
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False  # given once per value (`--input a --input b`)
    switch: bool = False  # a flag without a value
    carry: Carry = Carry.AS_IS


def option(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None, **flag: Any) -> Any:
    """A field of PlanOptions with its flag (`names` and the rest of `Flag`); no `names`: no flag."""
    metadata = {"flag": Flag(**flag)} if flag.get("names") else {}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def duration_s(text: str) -> float:
    """A duration given as 90s, 5m, 1.5m or a bare number of seconds, in seconds."""
    raw = text.strip().lower()
    scale = 60.0 if raw.endswith("m") else 1.0
    number = raw[:-1] if raw[-1:] in ("s", "m") else raw
    try:
        seconds = float(number) * scale
    except ValueError:
        raise ValueError(f"{text!r} is not a duration: write it as 90s, 5m or 120") from None
    if not seconds > 0:
        raise ValueError(f"{text!r}: the budget must be more than 0 seconds")
    return seconds


def _at_least_0(text: str) -> int:
    return max(0, int(text))


def _lengths(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(text).split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a list of token counts: write e.g. 32,128,512") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


@dataclass(frozen=True)
class PlanOptions:
    """What `planner plan` was asked to do."""

    model: str = option(
        names=("--model", "-m"), carry=Carry.MODEL,
        help="model source: demo:<name>, tv:<name>, file.py:factory, model.onnx, model.pt2, model.pt (see `planner "
             "models`)")
    input_shape: str | None = option(
        None, names=("--input-shape",),
        help="shape of a model's one float input, batch first, e.g. 1x3x224x224")
    inputs: tuple[str, ...] = option(
        (), names=("--input",), repeat=True, convert=tuple, metavar="NAME:SHAPE:DTYPE[:LOW-HIGH|:VALUE]",
        help="one model input (repeat for each), e.g. --input input_ids:1x128:int64:0-30522 --input "
             "attention_mask:1x128:int64; the range's upper end is excluded; an empty shape is a scalar and one value "
             "fixes it: --input sr::int64:16000")
    trust_code: bool = option(
        False, names=("--trust-code",), switch=True,
        help="allow importing and running a Python model file")
    target: str = option(
        "auto", names=("--target",), choices=("auto", "cpu", "nvidia", "edge"),
        help="where the model will run (default: this machine's kind)")
    quick: bool = option(
        False, names=("--quick",), switch=True,
        help="screen each candidate for about 2 seconds and confirm the leaders, within an 80 s budget unless --budget"
             " is given")
    out: Path | None = option(
        None, names=("--out",), convert=Path, carry=Carry.HOST_OUT,
        help="output folder (default reports/<date>-<model>-<target>)")
    requirements_file: Path | None = option(
        None, names=("--requirements",), convert=Path, carry=Carry.SHIP,
        help="TOML file with latency_ms, min_throughput, ...")
    requirement_overrides: dict = option(factory=dict)  # the requirement flags (REQUIREMENT_FLAGS), by name
    val_data: Path | None = option(
        None, names=("--val-data",), convert=Path, carry=Carry.REFUSED,
        help="folder of images (.png/.jpg; one sub-folder per class for labels), .wav clips, or .npy input batches "
             "(.npz, one array per input, for several inputs) and NAME_labels.npy files, for accuracy")
    val_preset: str | None = option(
        None, names=("--val-preset",), choices=("imagenet", "unit", "symmetric"),
        help="how --val-data images are normalised: imagenet (mean/std), unit (0-1), symmetric (-1-1); default "
             "imagenet for RGB inputs, unit for greyscale")
    val_transform: str | None = option(
        None, names=("--val-transform",), metavar="FILE.py:FN", carry=Carry.REFUSED,
        help="your own conversion of each --val-data image (a PIL image) or clip (its path) to an array in the input's"
             " shape without the batch (runs your code: needs --trust-code)")
    val_sample_rate: int | None = option(
        None, names=("--val-sample-rate",), parse=int, metavar="HZ",
        help="the rate --val-data .wav clips are resampled to, when the model has no fixed sample-rate input")
    plugins: tuple[str, ...] = option(
        (), names=("--plugins",), convert=_names,
        help="comma-separated plugin names to run (default: the plan's)")
    timeout_s: float = option(
        300.0, names=("--timeout",), parse=float,
        help="seconds per candidate")
    write_report: bool = option(True)
    device: str | None = option(
        None, names=("--device",),
        help="edge board to project each candidate onto (rpi4, rpi5, orin-nano, agx-orin, generic-arm): a labelled "
             "estimate from datasheet ceilings")
    finetune_steps: int | None = option(
        None, names=("--finetune-steps",), parse=int,
        help="fine-tuning steps: ternary-aware for the ternary candidate, and for a pruning or low-rank setting that "
             "fails the fidelity check (needs labelled data: demo:digits or --val-data with labels)")
    confirm: int = option(
        3, names=("--confirm",), parse=_at_least_0, metavar="N",
        help="with --quick, measure the N leaders again with the full method before ranking (default 3; 0 ranks the "
             "2-second screen as it is)")
    no_deploy: bool = option(
        False, names=("--no-deploy",), switch=True,
        help="write no hand-over packages (deploy/): a quicker plan for comparing runs, whose report says none was "
             "asked for")
    output_kinds: tuple[str, ...] = option(
        (), names=("--output-kind",), repeat=True, convert=tuple, metavar="NAME=KIND",
        help="what the compared (first) output is, which decides how candidates are judged: classes, dense (a map per "
             "pixel), sequence (class scores per position), ctc[:BLANK] (those scores decoded as CTC text, judged by "
             "lines unchanged and character error rate; the blank class is 0 unless given), embedding (vectors, "
             "judged by cosine and nearest neighbours kept) or regression; NAME is the output's name or 0 (default: "
             "read from the output's shape, and a vector of length 1 is an embedding)")
    budget_s: float | None = option(
        None, names=("--budget",), parse=duration_s, metavar="TIME",
        help="cap the whole plan's time, e.g. 90s, 5m or 120 (seconds; a quick plan's default is 80s): what can end "
             "ranked is screened first, each runtime's most promising setting before its others, and the report says "
             "what the budget cut")
    pipeline: str | None = option(
        None, names=("--pipeline",), metavar="FILE.py:PRE[,POST]", carry=Carry.REFUSED,
        help="also time your whole request, with the original model and with the plan's winner: PRE(raw sample) "
             "returns the model's input (an array in the input's shape without the batch axis, or with it; a dict of "
             "arrays by input name for several inputs, dtype as the model takes it); the optional POST(output) takes "
             "the first output as a numpy array. Raw samples come from samples() or a SAMPLES list in FILE.py, else "
             "the files of --val-data (as paths). The checklist then answers whether the model or the work around it "
             "is the bottleneck (runs your code: needs --trust-code)")

    # A decoder LLM (a Hugging Face causal-LM folder as --model): planner.llm.plan.
    prompt_lengths: tuple[int, ...] = option(
        (32, 128, 512), names=("--prompt-lengths",), convert=_lengths, metavar="N,N,...",
        help="decoder LLMs: the prompt lengths in tokens to time the first token at (default 32,128,512; lengths past "
             "the model's limit are left out)")
    new_tokens: int | None = option(
        None, names=("--new-tokens",), parse=int, metavar="N",
        help="decoder LLMs: tokens generated per timed call (default 64 with --quick, else 128)")
    context: int | None = option(
        None, names=("--context",), parse=int, metavar="TOKENS",
        help="decoder LLMs: the context length to plan memory (the KV cache) for (default: the longest prompt plus "
             "--new-tokens)")
    text: Path | None = option(
        None, names=("--text",), convert=Path, carry=Carry.REFUSED, metavar="FILE",
        help="decoder LLMs: an English text file to score perplexity and KL on (default: Python's bundled pydoc "
             "topics)")
    gguf: Path | None = option(
        None, names=("--gguf",), convert=Path, carry=Carry.REFUSED, metavar="FILE",
        help="decoder LLMs: a GGUF file of the same model (Q8_0, Q4_K_M...) for llama.cpp to measure")


REQUIREMENT_FLAGS: tuple[tuple[str, Flag], ...] = (
    ("latency_ms", Flag(("--latency-ms",), "latency SLA in ms", parse=float)),
    ("latency_percentile", Flag(("--latency-percentile",), "the percentile the latency SLA holds at",
                                choices=("p50", "p95", "p99"))),
    ("min_throughput", Flag(("--min-throughput",), "minimum samples/s", parse=float)),
    ("memory_mb", Flag(("--memory-mb",), "peak memory budget in MB", parse=float)),
    ("model_size_mb", Flag(("--model-size-mb",), "model size budget in MB", parse=float)),
    ("accuracy_drop", Flag(("--accuracy-drop",), "largest accuracy drop allowed (0.01 = 1%)", parse=float)),
)
"""The requirement flags: each sets one requirement (`requirement_overrides`, by its name), over a --requirements
file and the device class's defaults."""

MODEL_OPTIONS = ("model", "inputs", "input_shape", "trust_code")
"""The options that name a model and its inputs, which every command that loads a model takes."""


def flags() -> tuple[tuple[str, Flag], ...]:
    """Every option that has a flag, as (field name, flag), in declaration order."""
    return tuple((f.name, f.metadata["flag"]) for f in dataclasses.fields(PlanOptions) if "flag" in f.metadata)


def carried(carry: Carry) -> tuple[tuple[str, Flag], ...]:
    """The options a plan over SSH treats as `carry` says."""
    return tuple((name, flag) for name, flag in flags() if flag.carry is carry)
