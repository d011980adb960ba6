"""Roadmap: the optimization phases — quick wins, extra impact, architecture redesign — each step with its
measured effect (or labelled estimate) and accuracy risk, then the combined effect."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, p50, text
from planner.report.sections.candidates import label, ordered
from planner.report.sections.findings import impact_text
from planner.results import fidelity_view

PHASES = (1, 2, 3)
"""The roadmap phases: quick wins, extra impact, architecture redesign."""


def step_phase(step: dict) -> int:
    """The plan's phase for a step (1 where a hand-edited file lacks a valid one)."""
    phase = step.get("phase")
    return phase if isinstance(phase, int) and not isinstance(phase, bool) and phase in PHASES else 1


def step_plugins(step: dict) -> list[str]:
    """The plugins that measure a plan step ([] for advice)."""
    return [text(p) for p in as_list(step.get("plugins")) if text(p)]


def candidate_phase(data: ReportData, cand: dict) -> int:
    """The phase its plugin declared (recorded with the candidate); for a file written before plugins declared
    one, the phase of the plan step its plugin measured, else 1."""
    phase = as_dict(cand.get("declared")).get("phase")
    if isinstance(phase, int) and not isinstance(phase, bool) and phase in PHASES:
        return phase
    phases = [step_phase(s) for s in data.steps if text(cand.get("plugin")) in step_plugins(s)]
    return min(phases) if phases else 1


def family(cand: dict) -> str:
    """The runtime and precision a candidate deploys (its plugin's declared runtime, else its plugin): settings
    of one family are near-duplicates, folded to the fastest in the roadmap."""
    runtime = text(as_dict(cand.get("declared")).get("runtime")) or text(cand.get("plugin"))
    return f"{runtime} {text(cand.get('precision'))}"


def accuracy_risk(cand: dict) -> str:
    """The accuracy risk as measured by fidelity against the original."""
    fid = as_dict(cand.get("fidelity"))
    if not fid:
        return "accuracy risk not measured (no fidelity check ran)"
    parts = []
    if fid.get("accuracy") is not None:
        parts.append(f"accuracy {fmt.accuracy(fid['accuracy'])}")
        if fid.get("reference_accuracy") is not None:
            parts[-1] += f" vs {fmt.accuracy(fid['reference_accuracy'])} for the original"
    # A dense map, a sequence or a regression output is described by its own test, never by top-1 or cosine.
    by_kind = fidelity_view.phrases(fid)
    if fid.get("cosine") is not None and not by_kind:
        parts.append(f"cosine {fmt.cosine(fid['cosine'])}")
    if fid.get("top1_agreement") is not None and not by_kind:
        parts.append(f"top-1 agreement {fmt.pct(fid['top1_agreement'])}")
    parts += by_kind
    if fid.get("samples") is not None:
        parts.append(f"over {fmt.number(fid['samples'])} samples")
    verdict = {"ok": "passed the fidelity check", "rejected": "failed the fidelity check"}.get(
        text(cand.get("status")), "")
    if verdict and "generated inputs" in text(fid.get("decided_by")):
        verdict += " on generated inputs"
    return "accuracy risk: " + ", ".join(parts) + (f" — {verdict}" if verdict else "")


def _measured(data: ReportData, cand: dict) -> str:
    status = text(cand.get("status"))
    if status in ("failed", "skipped") or p50(cand) is None:
        return (f"**{label(cand)}** — {status or 'not measured'}: "
                f"{fmt.plain_reason(text(cand.get('reason'))) or 'no reason recorded'}")
    effect = (f"measured p50 {fmt.ms(p50(cand))}, {fmt.speedup(data.speedup(cand))} the baseline's "
              "speed")
    if as_dict(cand.get("declared")).get("arithmetic") == "structural":
        # New, untrained weights: comparing its outputs with the original's says nothing about accuracy.
        return f"**{label(cand)}** — {effect}; needs retraining: speed measured, accuracy not."
    if status == "unconfirmed":
        # Possibly a real win: generated inputs cannot tell, so the step is to check it on the user's data.
        reason = fmt.plain_reason(text(cand.get("reason")))
        return (f"**{label(cand)}** — check on your data first: {effect}; {accuracy_risk(cand)}"
                + (f". {reason[0].upper()}{reason[1:]}" if reason else "")
                + ". Re-run with `--val-data DIR` before relying on it.")
    line = f"**{label(cand)}** — {effect}; {accuracy_risk(cand)}"
    if status == "rejected":
        line += f". Not recommended: {fmt.plain_reason(text(cand.get('reason'))) or 'rejected'}"
    return line


# Where a measured candidate records the setting a plan step's option names: the thread counts its spec
# declares (the plugin contract's words, whatever the runtime calls them), else the torch threads the
# worker found in force. Older files are brought to these fields when read (planner.results.schema).
_SETTING_NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "intra_op_threads": (("spec", "threads"), ("threads", "torch_intra_op_threads")),
    "inter_op_threads": (("spec", "interop_threads"), ("threads", "torch_inter_op_threads")),
}


def _setting(cand: dict, option: str) -> object:
    for part, name in _SETTING_NAMES.get(option, (("spec", option),)):
        value = as_dict(cand.get(part)).get(name)
        if value is not None:
            return value
    return None


def step_measured(data: ReportData, step: dict) -> bool:
    """Whether this run measured the plan step: its plugin recorded a candidate, or a measured candidate of
    any runtime ran with every setting the step names (a thread-count step is measured by an ONNX Runtime
    candidate at that thread count even where the PyTorch plugin could not run)."""
    plugins = step_plugins(step)
    if plugins and any(c.get("plugin") in plugins for c in data.candidates):
        return True
    options = as_dict(step.get("options"))
    if not options:
        return False
    timed = [c for c in data.candidates if p50(c) is not None
             and text(c.get("status")) in ("ok", "rejected", "unconfirmed")]
    return any(all(_setting(c, k) == v for k, v in options.items()) for c in timed)


def _unmeasured_step(data: ReportData, step: dict) -> str:
    what = text(step.get("title")) or "planned step"
    plugins = step_plugins(step)
    reason = "; ".join(r for r in (data.skip_reason(p) for p in plugins) if r)
    if not reason:
        reason = ("no candidate of this step ran" if plugins else
                  "no plugin implements it, so it is advice only")
    expected = text(step.get("expected")).rstrip(".")
    line = f"**{what}** — not measured in this run ({reason})"
    if step.get("when"):
        line += f"; {text(step['when'])}"
    if expected:
        labelled = any(w in expected.lower() for w in ("estimate", "not a measurement", "expectation"))
        line += f". Expected: {expected if labelled else 'estimate — ' + expected}"
    if step.get("why"):
        line += f". Why: {text(step['why']).rstrip('.')}"
    return line + "."


def _finding_ids(data: ReportData) -> set[str]:
    return {f"finding:{text(f.get('id'))}" for f in data.findings if f.get("id")}


def _phase_items(data: ReportData, phase: int, extra: dict[str, str] | None = None) -> list[str]:
    """The phase's measured candidates (wins first, failures with why, slower ones named once) and its
    unmeasured steps; `extra` adds a sentence to the line of the candidate with that label."""
    extra = extra or {}
    measured = [c for c in ordered(data) if not data.is_reference(c) and candidate_phase(data, c) == phase]
    # Only candidates faster than the baseline are wins; slower ones are named once, as evidence
    # that the setting does not pay here.
    gains = [c for c in measured if (data.speedup(c) or 0) > 1]
    slower = [c for c in measured if c not in gains and p50(c) is not None]
    # One line per family (runtime and precision): the others are settings of the same deployment.
    leaders = {family(c): c for c in reversed(gains)}
    shown = [c for c in gains if leaders[family(c)] is c]
    items = [_measured(data, c) + (f" {extra[label(c)]}" if label(c) in extra else "") for c in shown]
    folded = [c for c in gains if c not in shown]
    if folded:
        items.append("Other settings of the same runtime and precision, also faster than the baseline but slower than "
                     "the setting above them: " + ", ".join(f"{label(c)} ({fmt.speedup(data.speedup(c))})"
                                                           for c in folded))
    items += [_measured(data, c) for c in measured if p50(c) is None]  # failed: say why
    if slower:
        items.append("Measured and not faster than the baseline, so not worth deploying here: "
                     + ", ".join(f"{label(c)} ({fmt.speedup(data.speedup(c))})" for c in slower))
    # A plan step made from a finding is listed with the finding itself (Phase 3), not twice.
    listed = _finding_ids(data)
    items += [_unmeasured_step(data, s) for s in data.steps
              if step_phase(s) == phase and text(s.get("source")) not in listed and not step_measured(data, s)]
    return items


def _combined(data: ReportData) -> list[str]:
    lines = ["### Combined effect", ""]
    best = data.best
    base = data.base_p50
    if best is not None and not data.is_reference(best):
        lines.append(f"- Measured: **{label(best)}** runs at p50 {fmt.ms(p50(best))} against "
                     f"{fmt.ms(base)} for the baseline, {fmt.speedup(data.speedup(best))} the "
                     "baseline's speed."
                     + (" The interaction section measures architecture changes combined with the best "
                        "hardware candidate."
                        if as_list(data.results.get("interactions")) else
                        " This is the only combined number measured in this run."))
        start, start_label = p50(best), label(best)
    else:
        others = [c for c in data.candidates if not data.is_reference(c)]
        lines.append(("- Measured: no candidate beat the baseline in this run" if others else
                      f"- Measured: no optimized candidate ({data.missing('measuring candidates')})")
                     + (f"; baseline p50 {fmt.ms(base)}." if base is not None else "."))
        start, start_label = base, "the baseline"
    findings = data.findings
    if findings and start is not None:
        # No p50 is projected from a finding: its impact is a share of FLOPs, time or memory the
        # pattern touches, not a saving, and optimizations interact.
        title = text(findings[0].get("title")) or text(findings[0].get("id"))
        lines.append(f"- Estimate: the largest architectural lever is *{title}* "
                     f"({impact_text(findings[0])}). Its effect on {start_label} is not projected: "
                     "re-run the planner on the redesigned model to measure it.")
    lines.append("- Steps marked *not measured in this run* are not included in any number above.")
    return lines + [""]


def _redesign_gains(data: ReportData) -> dict[str, str]:
    """Each measured redesign's architecture, hardware and combined gains (from the interaction cells),
    by the redesign's label."""
    from planner.report.sections.interaction import cells

    items = {}
    for pair in as_list(data.results.get("interactions")):
        pair = as_dict(pair)
        if not pair.get("needs_retraining"):
            continue
        by = cells(pair)
        gains = [fmt.real(by.get(n, {}).get("speedup")) for n in ("architecture", "hardware", "combined")]
        measured = ", ".join(f"{what} gain {fmt.speedup(g)}" for what, g in
                             zip(("architecture", f"hardware ({text(pair.get('hardware'))})", "combined"), gains))
        items[text(pair.get("architecture"))] = (
            f"Timed again beside the hardware candidate in the interaction step: {measured} (interaction factor "
            f"{fmt.number(fmt.real(pair.get('factor')))}, {text(pair.get('verdict')) or 'not computed'}).")
    return items


def render(data: ReportData) -> list[str]:
    """The Roadmap section."""
    lines = ["## Roadmap", ""]
    if not data.baseline and not data.candidates:
        return lines + [f"Roadmap: {data.missing('profiling the baseline')}.", ""]
    phases = (
        (1, "Quick wins", "no retraining: runtimes, graph compilers and settings measured here"),
        (2, "Extra impact", "calibration, quantization and compression that need no retraining: "
                            "trust them only after checking accuracy on validation data"),
    )
    for number, name, scope in phases:
        lines += [f"### Phase {number}: {name}", "", f"*{scope[0].upper()}{scope[1:]}.*", ""]
        items = _phase_items(data, number)
        why = "" if data.candidates else f" ({data.missing('measuring candidates')})"
        if items:
            lines += [f"- {item}" for item in items]
        elif number == 1:
            lines.append(f"- No quick win was measured in this run{why}.")
        else:
            lines.append("- Not measured in this run: no calibration, quantization or compression "
                         f"candidate was planned or ran{why}.")
        lines.append("")
    lines += ["### Phase 3: Architecture redesign", "",
              "*Needs retraining; effects from the profile are estimates, not measurements; a redesign the "
              "planner could build is measured for speed only (needs retraining: speed measured, accuracy "
              "not).*", ""]
    items = []
    for f in data.findings:
        title = text(f.get("title")) or text(f.get("id")) or "finding"
        layers = ", ".join(f"`{x}`" for x in f.get("layers") or [])
        item = f"**{title}** — {impact_text(f)}"
        if layers:
            item += f"; layers {layers}"
        if f.get("advice"):
            item += f". {text(f['advice'])}"
        items.append(item + " Accuracy risk: unknown until retrained and validated.")
    gains = _redesign_gains(data)
    items += _phase_items(data, 3, gains)
    # A redesign with no line of its own above (measured in the interaction step only) gets one here.
    items += [f"**{name}** — needs retraining: speed measured, accuracy not. {gain}"
              for name, gain in gains.items() if not any(i.startswith(f"**{name}**") for i in items)]
    lines += [f"- {i}" for i in items] if items else ["- The architecture lint suggested no change."]
    return lines + [""] + _combined(data)
