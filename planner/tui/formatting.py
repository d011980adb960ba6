"""Text helpers shared by the TUI's panes: unit formatters (planner.units') and cutting text to fit a column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner import units

MISSING = units.MISSING

# The panes format through planner.units, so a value reads the same here as in the CLI, the
# report and the advice text; a missing value is a dash, which keeps table columns narrow.
num = units.finite
ms = units.ms
rate = units.rate
size = units.size
mib = units.mib
flops = units.flops
flops_rate = units.flop_rate
bandwidth = units.bandwidth
pct = units.pct
speedup = units.speedup
sig = units.sig
ratio = units.ratio
cosine = units.cosine
accuracy = units.accuracy
count = units.count


def truncate(text: str, width: int) -> str:
    """Cut text to `width` characters, ending in an ellipsis when cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def truncate_middle(text: str, width: int) -> str:
    """Cut the middle out of text, keeping both ends (candidate labels differ at their ends)."""
    if len(text) <= width:
        return text
    head = max((width - 1) // 3, 1)
    tail = max(width - 1 - head, 0)
    return text[:head] + "…" + (text[-tail:] if tail else "")


# Words every label may shorten to, longest first in effect; the legend spells them out on screen.
ABBREVIATIONS = {"onnxruntime": "ORT", "openvino": "OV", "channels_last": "NHWC", "throughput": "tput",
                 "latency": "lat", "parallel": "par", "compile": "comp", "extended": "ext", "dynamic": "dyn"}
ABBREVIATION_MEANING = {"ORT": "ONNX Runtime", "OV": "OpenVINO", "NHWC": "channels-last memory layout",
                        "tput": "throughput", "lat": "latency", "par": "parallel", "comp": "torch.compile",
                        "ext": "extended", "dyn": "dynamic"}
# What tells candidates apart and is never cut: precision, thread counts, a fixed shape, INT8 families.
_KEEP = re.compile(r"^((fp|f|bf|int|uint)\d+|\d+(x\d+)?t|static|\d+-bit|nncf(-ac)?|qdq|QDQ)$")
_TOKEN = re.compile(r"[^\s(),]+")


@dataclass(frozen=True)
class ShortLabels:
    """Candidate labels made to fit a width: the labels, the words all of them shared, the abbreviations used."""

    labels: list[str]
    common: list[str]
    abbreviations: list[str]
    threads: bool = False  # some label counts threads ('2t'): the legend explains the notation

    def legend(self) -> str:
        """One line saying what was dropped and what the abbreviations mean ('' when nothing was)."""
        parts = []
        if self.common:
            parts.append(f"all: {' '.join(self.common)}")
        parts += [f"{a} = {ABBREVIATION_MEANING[a]}" for a in self.abbreviations]
        if self.threads or any(re.match(r"^\d+(x\d+)?t$", t) for t in self.common):
            parts.append("2t = 2 threads, 2x1t = 2 streams of 1 thread")
        return " · ".join(parts)


def _fits(tokens: list[str], width: int) -> bool:
    return len(" ".join(tokens)) <= width


def _shorten(i: int, kept: list[list[str]], width: int, taken: set[str]) -> list[str]:
    """Label i's words cut to fit `width` without becoming another label's words.

    Drop the longest word that is neither the runtime (the first word) nor
    a distinguishing one, as long as it reads like no other label (`taken`: those already shortened);
    then cut words to 3 characters.
    """
    tokens = list(kept[i])
    others = {" ".join(k) for j, k in enumerate(kept) if j != i} | taken
    while not _fits(tokens, width):
        droppable = [j for j in range(1, len(tokens)) if not _KEEP.match(tokens[j])
                     and " ".join(tokens[:j] + tokens[j + 1:]) not in others]
        if not droppable:
            break
        j = max(droppable, key=lambda k: len(tokens[k]))
        tokens = tokens[:j] + tokens[j + 1:]
    while not _fits(tokens, width):
        cuttable = [j for j, t in enumerate(tokens) if not _KEEP.match(t) and len(t) > 3]
        if not cuttable:
            break
        j = max(cuttable, key=lambda k: len(tokens[k]))
        tokens[j] = tokens[j][: max(3, len(tokens[j]) - (len(" ".join(tokens)) - width))]
    return tokens


def short_labels(labels: list[str], width: int) -> ShortLabels:
    """Candidate labels within `width`, still telling apart every pair of different labels.

    The words every label shares go first (they tell no candidate apart; the legend names them),
    then long labels abbreviate, drop and cut words that set no candidate apart; precision,
    thread counts, 'static' and the INT8 family are never cut.
    """
    split = [_TOKEN.findall(label) or [label] for label in labels]
    common = [t for t in split[0] if len(labels) > 1 and all(t in s for s in split[1:])] if split else []
    kept = [[t for t in s if t not in common] or s for s in split]
    used: list[str] = []
    if not all(_fits(k, width) for k in kept):
        # One label too long abbreviates the words in all of them, so a runtime reads the same in every row.
        used = list(dict.fromkeys(ABBREVIATIONS[t] for k in kept for t in k if t in ABBREVIATIONS))
        kept = [[ABBREVIATIONS.get(t, t) for t in k] for k in kept]
    out: list[str] = []
    for i, tokens in enumerate(kept):
        if not _fits(tokens, width):
            tokens = _shorten(i, kept, width, set(out))
        out.append(truncate(" ".join(tokens), width))
    # Last resort (a width too narrow for the words that matter): twins lead with the words some twin lacks,
    # then with the words fewest labels share, so a reordered twin does not become another label's twin.
    uses = {t: sum(t in k for k in kept) for k in kept for t in k}
    twins_of = [[j for j, other in enumerate(out) if other == text and labels[j] != labels[i]]
                for i, text in enumerate(out)]
    for i, twins in enumerate(twins_of):
        if twins:
            differ = {t for t in kept[i] if any(t not in kept[j] for j in twins)}
            out[i] = truncate(" ".join(sorted(kept[i], key=lambda t: (t not in differ, uses[t]))), width)
    _number_twins(out, labels, width)
    threads = any(re.match(r"^\d+(x\d+)?t$", t) for k in kept for t in k)
    return ShortLabels(out, common, used, threads)


def _number_twins(out: list[str], labels: list[str], width: int) -> None:
    """Different labels that still read the same (a width too narrow for any word that tells them apart) end in
    their place among the twins ('…2'), so no two rows or bars ever read alike; the details give the full label."""
    for i, text in enumerate(out):
        twins = [j for j, other in enumerate(out) if other == text and labels[j] != labels[i]]
        if twins and width >= 3:
            for n, j in enumerate(sorted([i, *twins]), start=1):
                tag = f"…{n}"
                out[j] = out[j][: max(width - len(tag), 1)].rstrip("…") + tag


# The command line's options and the TUI control that does the same, for errors raised by the engine.
_REQUIREMENT_FIELDS = {"latency_ms": "Latency (ms)", "latency-ms": "Latency (ms)",
                       "min_throughput": "Min samples/s", "min-throughput": "Min samples/s",
                       "memory_mb": "Memory (MiB)", "memory-mb": "Memory (MiB)",
                       "model_size_mb": "Model size MiB", "model-size-mb": "Model size MiB",
                       "accuracy_drop": "Accuracy drop", "accuracy-drop": "Accuracy drop",
                       "latency_percentile": "percentile", "latency-percentile": "percentile"}
# A requirement's key anywhere in an engine message ("latency_ms takes a number"): said as its field's name.
_REQUIREMENT_KEY = re.compile(r"\b(" + "|".join(k for k in _REQUIREMENT_FIELDS if "_" in k) + r")\b")
# An input spec names a shape (digits) or a NAME:SHAPE pair; "--input for every input" has none.
_SPEC = r"[^\s,;()]*[:\d][^\s,;()]*"
_INPUT_RUN = re.compile(rf"(?:--input(?:-shape)?[ =]{_SPEC}(?:\s+(?=--input)|(?=[\s,;)]|$)))+")
_OPTION_WORDS = (
    (re.compile(r"\brun `?planner detect --ceilings --refresh`?"), "press r (Measure ceilings, step 1)"),
    (re.compile(r"\b(?:pass|add|use|with) --trust-code\b"), "tick 'trust code' in step 2"),
    (re.compile(r"--trust-code\b"), "the 'trust code' tick box (step 2)"),
    (re.compile(r"\bpass --out with a folder"), "type in the Folder field (step 9) a folder"),
    (re.compile(r"--out\b"), "the Folder field (step 9)"),
    (re.compile(r"--input(?:-shape)?\b"), "the Inputs field (step 2)"),
    (re.compile(r"--val-data DIR\b"), "a folder in the Val data field (step 2)"),
    # A folder named after the flag (the engine's own words follow it: "with labels", "images are ...").
    (re.compile(r"--val-data (?!(?:with|images?|folder|layout|files)\b|\.wav\b)([^\s:;,()`']+)"),
     r"the Val data folder \1 (step 2)"),
    (re.compile(r"--val-data\b"), "the Val data field (step 2)"),
    (re.compile(r"--val-preset\b"), "the Val data preset (step 2)"),
    (re.compile(r"--output-kind\b"), "the Output kind field (step 2)"),
    (re.compile(r"--prompt-lengths\b"), "the Prompt lengths field (step 2)"),
    (re.compile(r"--new-tokens\b"), "the New tokens field (step 2)"),
    (re.compile(r"--([a-z-]+)\b"), None),
)


def _input_run(match: re.Match[str]) -> str:
    values = re.findall(rf"--input(?:-shape)?[ =]({_SPEC})", match.group(0))
    return f"'{' '.join(values)}' in the Inputs field (step 2)"


def tui_words(text: str) -> str:
    """An engine message with its command-line advice and requirement keys said as the TUI's fields and tick
    boxes."""
    if not text or "--" not in text and not text.startswith("flag: ") and not _REQUIREMENT_KEY.search(text):
        return text
    text = re.sub(r"^flag: (\w+)", lambda m: _REQUIREMENT_FIELDS.get(m.group(1), m.group(1)), text)
    text = _REQUIREMENT_KEY.sub(lambda m: _REQUIREMENT_FIELDS[m.group(1)], text)
    # A blank field is how the form says "no target" (its number fields take no words).
    text = text.replace(', or "none" for no target', ", or blank for no target")
    text = _INPUT_RUN.sub(_input_run, text)
    for pattern, words in _OPTION_WORDS:
        if words is None:
            text = pattern.sub(lambda m: (f"the {_REQUIREMENT_FIELDS[m.group(1)]} field (step 3)"
                                          if m.group(1) in _REQUIREMENT_FIELDS else m.group(0)), text)
        else:
            text = pattern.sub(words, text)
    return text
