"""report.md for an LLM plan: the decision first, then the candidates, the KV cache, the roadmap, the package.

Read from the typed record (planner.llm.results) only: every figure printed was measured in the plan, or says it
is an estimate and from what. Terms are explained where they first appear.
"""

from __future__ import annotations

from pathlib import Path

from planner import units
from planner.llm.results import LlmCandidate, LlmPlan

_GB = 1e9


def _threads(count: int) -> str:
    return f"{count} thread" if count == 1 else f"{count} threads"


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def _pct(value: float) -> str:
    """A signed share with two decimals, never '-0.00%' (a change that rounds to nothing has no sign)."""
    text = f"{value:+.2%}"
    return "0.00%" if text in ("+0.00%", "-0.00%") else text


def _ttft(c: LlmCandidate, length: int) -> str:
    t = c.timings
    return _ms(t.ttft_p50_ms[length]) if t and length in t.ttft_p50_ms else "–"


def _fidelity_cells(c: LlmCandidate) -> tuple[str, str, str]:
    f = c.fidelity
    if f is None:
        return "–", "–", "not judged (no original to compare with)"
    if f.verdict == "reference":
        return f"ppl {f.perplexity:.2f}", "0", "the original"
    change = (f"{_pct(f.perplexity_change.value)} ({_pct(f.perplexity_change.low)} to "
              f"{_pct(f.perplexity_change.high)})" if f.perplexity_change else "–")
    kl = (f"{max(0.0, f.kl.value):.4f} ({max(0.0, f.kl.low):.4f} to {max(0.0, f.kl.high):.4f})" if f.kl
          else "not measured")
    return change, kl, f.verdict


def _memory_at(plan: LlmPlan, c: LlmCandidate) -> str:
    """Weights at the candidate's precision plus its KV cache at the planned context: an estimate from the config."""
    return units.size(plan.facts.memory_bytes(c.weights, c.kv, plan.context))


def render(plan: LlmPlan, figures: dict[str, str] | None = None) -> str:
    """The report's Markdown; `figures` names the drawn figures' files (name -> path relative to the report)."""
    figures = figures or {}
    f = plan.facts
    measured = [c for c in plan.candidates if c.status == "measured" and c.timings]
    winner = plan.candidate(plan.winner) if plan.winner else None
    base = plan.baseline
    lines = [f"# Deployment plan: {f.name} (a decoder language model) on {plan.cpu}", ""]
    lines += _decision(plan, winner, base) + [""]
    lines += ["## The model", "",
              f"{f.architecture}: {f.layers} layers, {f.heads} attention heads sharing {f.kv_heads} key/value heads "
              f"(head size {f.head_size}), hidden size {f.hidden}, vocabulary {f.vocab:,} tokens, context limit "
              f"{f.context:,} tokens; {f.parameters / 1e6:,.1f}M parameters, {units.size(f.weight_bytes)} of "
              f"weights as stored ({f.stored_dtype}).", ""]
    lines += _machine(plan) + [""]
    lines += _candidates_table(plan, measured) + [""]
    if "ttft" in figures:
        lines += [f"![Time to first token against prompt length]({figures['ttft']})", ""]
    lines += _not_measured(plan)
    lines += _kv_section(plan, measured) + [""]
    if "memory" in figures:
        lines += [f"![Memory against context]({figures['memory']})", ""]
    lines += _roadmap(plan, measured, base) + [""]
    if plan.board is not None:
        lines += _board(plan) + [""]
    lines += _package(plan, winner) + [""]
    lines += _method(plan)
    if plan.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in plan.warnings]
    return "\n".join(lines).rstrip() + "\n"


def _decision(plan: LlmPlan, winner: LlmCandidate | None, base: LlmCandidate | None) -> list[str]:
    status = {"interrupted": "This plan was stopped before it finished; it reports what was measured. ",
              "failed": "This plan failed part way; it reports what was measured. "}.get(plan.status, "")
    if winner is None or winner.timings is None:
        return [status + (plan.decision or "No candidate was measured.").rstrip(".") + "."]
    t = winner.timings
    longest = max(t.ttft_p50_ms)
    text = (f"{status}**Ship {winner.title}.** It decodes {units.tokens_rate(t.decode_tokens_per_s)} (time per output "
            f"token, TPOT: p50 {_ms(t.tpot_p50_ms)}, p90 {_ms(t.tpot_p90_ms)}, over {t.tpot_samples} tokens) and "
            f"answers a {longest}-token prompt with its first token in {_ms(t.ttft_p50_ms[longest])} (time to first "
            "token, TTFT, the prompt's processing).")
    if base is not None and base.timings is not None and base is not winner:
        text += (f" The original (PyTorch fp32) decodes {units.tokens_rate(base.timings.decode_tokens_per_s)}: "
                 f"{t.decode_tokens_per_s / base.timings.decode_tokens_per_s:.2f}x, timed in the same plan, one "
                 "candidate after another.")
    fid = winner.fidelity
    if fid is not None and fid.verdict == "met" and fid.perplexity_change is not None:
        kl = f" and a mean KL divergence of {fid.kl.value:.4f} nats per token" if fid.kl else ""
        text += (f" It keeps the original's quality on {fid.tokens_scored} tokens of text: perplexity "
                 f"{_pct(fid.perplexity_change.value)} (95% interval {_pct(fid.perplexity_change.low)} to "
                 f"{_pct(fid.perplexity_change.high)}; the limit is +{plan.ppl_limit:.0%}){kl} (limit "
                 f"{plan.kl_limit:g}).")
    elif fid is not None and fid.verdict == "reference":
        text += (" It is the original itself: no candidate that kept the original's quality within the limits "
                 "decoded faster.")
    if winner.roof_share is not None and plan.roof is not None and not plan.cache_resident:
        text += (f" Decoding reads about {units.size(winner.bytes_per_token)} per token, so it runs at "
                 f"{winner.roof_share:.0%} of the {plan.roof.bytes_per_s / _GB:.1f} GB/s this machine's "
                 f"{_threads(plan.threads)} read memory at.")
    return [text]


def _machine(plan: LlmPlan) -> list[str]:
    lines = ["## The machine's limit", ""]
    roof = plan.roof
    if roof is None:
        return lines + ["The read bandwidth could not be measured, so no candidate is compared with a roof."]
    text = (f"Decoding one token reads every weight once, so its speed is bounded by how fast memory is read. "
            f"{_threads(plan.threads)} read **{roof.bytes_per_s / _GB:.1f} GB/s** here (measured: {roof.method}, "
            f"{units.size(roof.buffer_bytes)} buffer, best of {roof.samples}, spread {roof.spread:.0%}).")
    if plan.cache_resident:
        text += (f" This model's weights ({units.size(plan.facts.weight_bytes)}) fit in the "
                 f"{units.size(roof.last_level_cache_bytes)} last-level cache: it is cache-resident, so it is not "
                 "compared with the memory roof (the share of the roof below is left out).")
    return lines + [text]


def _candidates_table(plan: LlmPlan, measured: list[LlmCandidate]) -> list[str]:
    lengths = plan.prompt_lengths
    head = (["Candidate", "Weights", "KV cache"] + [f"TTFT p50 @{n}" for n in lengths]
            + ["TPOT p50 / p90", "Tokens/s", "Share of roof", f"Memory @{plan.context}", "Perplexity change (95%)",
               "KL (95%)", "Fidelity"])
    lines = ["## Candidates", "",
             f"Each timed over {plan.new_tokens} generated tokens per call after a warm-up, greedy, "
             f"{'3' if plan.quick else '5'} calls per prompt length. Perplexity and KL (the Kullback-Leibler "
             "divergence of the next-token distributions from the original's) are scored on the same text windows; "
             f"memory is weights plus KV cache at {plan.context} tokens, estimated from the config.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in sorted(measured, key=lambda c: -(c.timings.decode_tokens_per_s if c.timings else 0)):
        t = c.timings
        assert t is not None
        change, kl, verdict = _fidelity_cells(c)
        share = "cache-resident" if plan.cache_resident else f"{c.roof_share:.0%}" if c.roof_share is not None else "–"
        mark = " **(chosen)**" if c.label == plan.winner else ""
        lines.append("| " + " | ".join([c.title + mark, c.weights, c.kv] + [_ttft(c, n) for n in lengths] + [
            f"{_ms(t.tpot_p50_ms)} / {_ms(t.tpot_p90_ms)}", units.tokens_rate(t.decode_tokens_per_s, unit=False), share,
            _memory_at(plan, c), change, kl, verdict]) + " |")
    greedy = [(c, c.fidelity.greedy) for c in measured
              if c.fidelity and c.fidelity.greedy and c.fidelity.verdict != "reference"]
    if greedy:
        g0 = greedy[0][1]
        lines += ["", f"Greedy generations ({g0.prompts} prompts, {g0.tokens_each} tokens each) against the "
                  "original's:"]
        for c, g in greedy:
            firsts = [i for i in g.first_divergence if i is not None]
            first = f"first differing token at position {min(firsts)} at the earliest" if firsts else "none differ"
            lines.append(f"- {c.title}: {g.identical} of {g.prompts} identical, {g.share_differing:.0%} of tokens "
                         f"differ; {first}")
    return lines


def _not_measured(plan: LlmPlan) -> list[str]:
    others = [c for c in plan.candidates if c.status != "measured"]
    if not others:
        return []
    lines = ["### Not measured", ""]
    for c in others:
        lines.append(f"- {c.title}: {c.status}: {c.reason}")
    return lines + [""]


def _kv_section(plan: LlmPlan, measured: list[LlmCandidate]) -> list[str]:
    f = plan.facts
    lines = ["## KV cache", "",
             f"Predicted from the config: 2 (keys and values) x {f.layers} layers x {f.kv_heads} KV heads x "
             f"{f.head_size} values x bytes per value x tokens (an 8-bit cache adds a scale and a zero point per head "
             "and token); measured from the runtime's own cache after a generation (OpenVINO's in whole blocks of "
             "32 tokens).", "", "| Candidate | Tokens held | Predicted | Measured | Difference |",
             "|---|---|---|---|---|"]
    for c in measured:
        for p in c.kv_points[-1:]:  # the longest context: where a difference would show
            if p.measured_bytes is None:
                lines.append(f"| {c.title} | {p.tokens} | {units.size(p.predicted_bytes)} | not exposed by the runtime "
                             "| – |")
            else:
                diff = p.measured_bytes / p.predicted_bytes - 1 if p.predicted_bytes else 0.0
                lines.append(f"| {c.title} | {p.tokens} | {units.size(p.predicted_bytes)} | "
                             f"{units.size(p.measured_bytes)} | {_pct(diff)} |")
    return lines


def _roadmap(plan: LlmPlan, measured: list[LlmCandidate], base: LlmCandidate | None) -> list[str]:
    lines = ["## Roadmap", ""]
    ok = [c for c in measured if c.fidelity and c.fidelity.verdict in ("met", "reference") and c.timings]

    def best(pick) -> LlmCandidate | None:
        chosen = [c for c in ok if pick(c)]
        return max(chosen, key=lambda c: c.timings.decode_tokens_per_s) if chosen else None  # type: ignore

    base_tps = base.timings.decode_tokens_per_s if base and base.timings else None

    def step(c: LlmCandidate | None, what: str) -> str:
        if c is None or c.timings is None:
            return f"{what}: no candidate of this kind kept the original's quality, or none was measured."
        gain = f", {c.timings.decode_tokens_per_s / base_tps:.2f}x the original" if base_tps else ""
        return f"{what}: **{c.title}**, {units.tokens_rate(c.timings.decode_tokens_per_s)}{gain}."

    lines.append("1. " + step(best(lambda c: c.weights in ("fp32", "bf16") and c.kv in ("fp32", "bf16")),
                              "Runtime and threads, weights unchanged"))
    lines.append("2. " + step(best(lambda c: c.weights in ("int8", "int4")),
                              "Weight-only INT8 or INT4 (fewer bytes read per token)"))
    lines.append("3. " + step(best(lambda c: c.kv in ("u8", "int8", "i8")), "A lower-precision KV cache"))
    lines.append(f"4. Context limit: the plan sized memory for {plan.context} tokens; each 1,000 tokens more of "
                 f"context adds {units.size(_kv_per_1000(plan))} of KV cache at 16 bits (an estimate from the config).")
    rejected = [c for c in measured if c.fidelity and c.fidelity.verdict in ("missed", "not established")]
    for c in rejected:
        lines.append(f"   - Not on the road: {c.title} ({c.fidelity.verdict}: {c.fidelity.reason}).")  # type: ignore
    return lines


def _kv_per_1000(plan: LlmPlan) -> int:
    from planner.models.llm import kv_cache_bytes

    return kv_cache_bytes(plan.facts, 1000, 2.0)


def _board(plan: LlmPlan) -> list[str]:
    b = plan.board
    assert b is not None
    lines = [f"## On a {b.board} (an estimate)", "", b.basis + ".", "", "| Candidate | Decode tokens/s (estimate) | "
             f"Fits in memory at {plan.context} tokens |", "|---|---|---|"]
    for label, speed in sorted(b.tokens_per_s.items(), key=lambda kv: -kv[1]):
        c = plan.candidate(label)
        fits = "yes" if b.fits.get(label) else "no"
        lines.append(f"| {c.title if c else label} | {units.tokens_rate(speed, unit=False)} | {fits} |")
    return lines


def _package(plan: LlmPlan, winner: LlmCandidate | None) -> list[str]:
    lines = ["## Hand-over package", ""]
    if winner is None:
        return lines + ["No package: no candidate was chosen."]
    if not plan.package:
        why = plan.package_problem or ("the plan was stopped before it finished" if plan.status == "interrupted"
                                       else "it was not written")
        return lines + [f"No package: {why}."]
    check = ("`python run.py --check` generated 8 tokens when the plan checked it"
             if not plan.package_problem else f"its check failed: {plan.package_problem}")
    lines.append(f"`{plan.package}/` holds the model files of {winner.title} and `run.py`, which generates with "
                 f"that runtime alone: `python {plan.package}/run.py --prompt \"...\" --max-new-tokens 64`; {check}.")
    if winner.apply:
        lines += ["", "In your own code:", "", "```python", winner.apply, "```"]
    return lines


def _method(plan: LlmPlan) -> list[str]:
    return ["## How this was measured", "",
            f"- Prompts of {', '.join(str(n) for n in plan.prompt_lengths)} tokens and fidelity text from {plan.text}.",
            f"- {_threads(plan.threads)} per candidate; each candidate in its own process, loaded, warmed up, then "
            "timed token by token as its runtime hands tokens over.",
            f"- Fidelity limits: perplexity within +{plan.ppl_limit:.0%} and mean KL at most {plan.kl_limit:g} nats "
            "per token; a candidate whose 95% interval straddles a limit is 'not established' and is not chosen.",
            f"- Plan started {plan.started}, finished {plan.finished or 'not finished'}; status {plan.status}."]


def write_report(plan: LlmPlan, folder: Path) -> Path:
    """Write report.md into `folder`."""
    from planner.llm.figures import draw_llm_figures

    path = Path(folder) / "report.md"
    path.write_text(render(plan, draw_llm_figures(plan, folder)), encoding="utf-8")
    return path
