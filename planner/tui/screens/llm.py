"""A decoder LLM folder in the TUI: its facts (the Model step), its plan's settings, and its candidates as lines.

A causal-LM folder is planned by its own method (planner.llm) in one run, not through the profile, checklist and
decision tree: the Model step shows what its config says and the two settings the plan takes (prompt lengths and
new tokens per call), the Optimize step runs the plan and lists its candidates, the Report step shows report.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label

from planner import units
from planner.tui import formatting as fmt
from planner.tui.widgets.kv import Row
from planner.tui.widgets.progress import Phase
from planner.tui.widgets.toggles import Tick

if TYPE_CHECKING:
    from planner.llm.results import LlmCandidate, LlmPlan
    from planner.models.llm import LlmFacts

DEFAULT_PROMPTS = "32,128,512"
DEFAULT_NEW_TOKENS = "64"

NOT_THE_CNN_STEPS = ("A decoder language model is planned in one run: Profile, Checklist and Decision tree "
                     "(steps 4–6) do not apply. Press 7, then r, to run its plan; step 9 shows its report.")
"""What the Model step says under an LLM's facts."""

DOES_NOT_APPLY = "does not apply to a language model: its plan is one run (press 7, then r)"
"""What Profile, Checklist and Decision tree say while a decoder LLM folder is loaded."""

LLM_PHASES = {
    "roof": Phase("measuring the read roof", 0.0, 0.1, drop=("Measuring ",)),
    "build": Phase("building", 0.1, 0.2, drop=("Building ",)),
    "measure": Phase("measuring", 0.2, 0.9, drop=("Measuring ",)),
    "package": Phase("checking the package", 0.9, 1.0, drop=("Checking the package: ",)),
}
"""An LLM plan's phases, by the stages its events name (planner.llm.plan)."""

_STORED = {"F32": "32-bit float", "F16": "16-bit float", "BF16": "16-bit brain float", "F64": "64-bit float",
           "I8": "8-bit integer", "U8": "8-bit integer"}
_VERDICT = {"met": "fidelity met", "missed": "fidelity missed", "not established": "fidelity not established",
            "reference": "the reference for fidelity"}
_HOW = {"ok": "done", "interrupted": "cancelled", "failed": "failed"}


class SettingsError(ValueError):
    """A plan setting typed in a form the plan cannot take; its text says what to type."""


def facts_rows(facts: LlmFacts) -> list[Row]:
    """An LLM folder's facts, from its config and weight headers, in plain words."""
    stored = _STORED.get(facts.stored_dtype, facts.stored_dtype)
    return [
        ("Model", f"{facts.name}: a decoder language model ({facts.architecture})"),
        ("Layers", str(facts.layers)),
        ("Attention", f"{facts.heads} heads sharing {facts.kv_heads} key/value heads, head size {facts.head_size}"),
        ("Vocabulary", f"{facts.vocab:,} tokens"),
        ("Context limit", f"{facts.context:,} tokens"),
        ("Parameters", fmt.count(facts.parameters)),
        ("Weights", f"{fmt.size(facts.weight_bytes)} as stored ({stored})"),
    ]


def parse_settings(prompts: str, new_tokens: str) -> tuple[tuple[int, ...], int]:
    """The two fields as the plan takes them: prompt lengths (whole numbers, separated by commas or spaces) and the
    tokens each call generates (at least 2: the time per token is measured between tokens). A blank field takes
    its default, which its placeholder shows."""
    prompts, new_tokens = prompts.strip() or DEFAULT_PROMPTS, new_tokens.strip() or DEFAULT_NEW_TOKENS
    parts = [p for p in re.split(r"[,\s]+", prompts) if p]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SettingsError(f"prompt lengths {prompts!r}: type whole numbers of tokens, "
                            "separated by commas, e.g. 32,128,512")
    if not new_tokens.isdigit() or int(new_tokens) < 2:
        raise SettingsError(f"new tokens {new_tokens!r}: type a whole number of at least 2 "
                            "(the time per token is measured between tokens), e.g. 64")
    return tuple(sorted({int(p) for p in parts})), int(new_tokens)


@dataclass(frozen=True)
class LlmRun:
    """What the Model step's LLM fields ask of the plan."""

    prompt_lengths: tuple[int, ...]
    new_tokens: int
    quick: bool
    gguf: str | None  # a GGUF file for llama.cpp, as the engine's machine names it; None when the field is blank


class LlmSettings(Vertical):
    """The LLM plan's settings on the Model step: prompt lengths, new tokens per call, quick or full, and a GGUF
    file for llama.cpp."""

    DEFAULT_CSS = """
    LlmSettings { height: auto; margin-top: 1; }
    LlmSettings Tick { margin-left: 1; }
    """

    def compose(self) -> ComposeResult:
        """Three rows: the prompt lengths; the new tokens and the quick tick; the GGUF file."""
        with Horizontal(classes="form-row"):
            yield Label("Prompt lengths", classes="row-label")
            yield Input(DEFAULT_PROMPTS, placeholder=DEFAULT_PROMPTS, id="llm-prompts", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("New tokens", classes="row-label")
            yield Input(DEFAULT_NEW_TOKENS, placeholder=DEFAULT_NEW_TOKENS, id="llm-new-tokens", compact=True,
                        classes="number")
            yield Label(" per call", classes="hint")
            yield Tick("quick", value=True, id="llm-quick", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("GGUF file", classes="row-label")
            yield Input("", placeholder="optional, for llama.cpp", id="llm-gguf",
                        compact=True)

    def values(self) -> LlmRun:
        """The fields as the plan takes them; SettingsError when one holds what the plan cannot take."""
        lengths, new_tokens = parse_settings(self.query_one("#llm-prompts", Input).value,
                                             self.query_one("#llm-new-tokens", Input).value)
        gguf = self.query_one("#llm-gguf", Input).value.strip()
        return LlmRun(lengths, new_tokens, self.query_one("#llm-quick", Tick).value, gguf or None)

    def describe(self) -> str:
        """The settings in words, for the Optimize step's intro ('prompts of 32, 128, 512 tokens, 64 new each, ...')."""
        try:
            run = self.values()
        except SettingsError:
            return "the settings in step 2 need fixing first"
        gguf = f", llama.cpp on {Path(run.gguf).name}" if run.gguf else ""
        return (f"prompts of {', '.join(str(n) for n in run.prompt_lengths)} tokens, {run.new_tokens} new each, "
                f"{'quick' if run.quick else 'full'}{gguf}")


def counts_text(plan: LlmPlan) -> str:
    """How many candidates ended each way: '2 measured, 1 not reached'."""
    counts: dict[str, int] = {}
    for c in plan.candidates:
        counts[c.status] = counts.get(c.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "no candidate"


def ended_text(plan: LlmPlan, out_dir: str) -> str:
    """The run's last line: how it ended, its candidates, and where it wrote."""
    return f"{_HOW.get(plan.status, plan.status)}: {counts_text(plan)}; results in {out_dir}"


def roof_text(plan: LlmPlan) -> str:
    """The read roof the candidates' decode is compared with, in a line."""
    roof = plan.roof
    if roof is None:
        return "The read roof could not be measured: no share of it is given."
    threads = f"{plan.threads} thread{'s' if plan.threads != 1 else ''}"
    text = f"Read roof: {fmt.bandwidth(roof.bytes_per_s)} with {threads}"
    if plan.cache_resident:
        return text + "; the weights fit in the cache, so no candidate is given a share of it."
    return text + " (decoding a token reads every weight once)."


def candidate_lines(plan: LlmPlan) -> Table:
    """The decision, the read roof, then each candidate: its title (★ the chosen one), then TTFT at the longest
    prompt, TPOT p50, tokens/s, share of the read roof and fidelity verdict, or why it was not measured. Lines
    that wrap keep to the right of the marks."""
    table = Table.grid(padding=(0, 0), expand=True)
    table.add_column(width=2, no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    winner = plan.winner
    decision = plan.decision.rstrip(".")
    table.add_row("", Text(f"{decision}." if winner and decision else
                           f"None chosen: {decision}." if decision else "None chosen.", style="bold"))
    table.add_row("", Text(roof_text(plan), style="dim"))
    for c in plan.candidates:
        table.add_row("★" if winner and c.label == winner else "", _candidate(plan, c))
    return table


def _candidate(plan: LlmPlan, c: LlmCandidate) -> Text:
    line = Text()
    line.append(c.title or c.label, style="bold")
    if c.is_baseline:
        line.append(" (the original)")
    t = c.timings
    if c.status != "measured" or t is None:
        line.append(f"\n{c.status}" + (f": {c.reason}" if c.reason else ""), style="dim")
        return line
    longest = max(t.ttft_p50_ms)
    figures = [f"TTFT {fmt.ms(t.ttft_p50_ms[longest])} at {longest} tokens", f"TPOT p50 {fmt.ms(t.tpot_p50_ms)}",
               units.tokens_rate(t.decode_tokens_per_s)]
    if plan.roof is not None and not plan.cache_resident and c.roof_share is not None:
        figures.append(f"{fmt.pct(c.roof_share)} of the roof")  # cache-resident weights: the roof line says why
    verdict = c.fidelity.verdict if c.fidelity else ""
    figures.append(_VERDICT.get(verdict, f"fidelity {verdict}") if c.fidelity else "fidelity not judged")
    line.append("\n" + " · ".join(figures))
    return line
