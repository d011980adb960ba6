"""Bottlenecks: the whole-model roofline verdict and the three bottleneck classes of layers."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.report import figdata, fmt
from planner.report.data import ReportData
from planner.results import Baseline
from planner.results.analysis import BottleneckRecord, VerdictRecord

# The bottleneck classes, each with the family of fixes that applies to it.
CLASSES: tuple[tuple[str, str, str], ...] = (
    ("memory-bound", "Memory-bound",
     "limited by memory bandwidth: cut the bytes moved (fuse with the neighbouring layer, "
     "smaller or narrower feature maps, lower precision)"),
    ("compute-bound", "Compute-bound",
     "limited by arithmetic: cut FLOPs (smaller kernels, depthwise-separable or grouped convs, "
     "fewer channels) or use faster math (bf16, fp16, int8)"),
    ("throughput-limited", "Throughput-limited",
     "far slower than both roofline floors: launch and framework overhead set the time; fuse "
     "layers, batch more work per call, or compile the graph"),
)

_ALIASES = {"memory": "memory-bound", "memory_bound": "memory-bound", "compute": "compute-bound",
            "compute_bound": "compute-bound", "overhead": "throughput-limited",
            "overhead-bound": "throughput-limited", "throughput_limited": "throughput-limited"}


def _canonical(name: str) -> str:
    key = name.strip().lower()
    return _ALIASES.get(key, key)


@dataclass
class _Group:
    """One class's layers as the section lists them, with its count and share where the file recorded them."""

    entries: list[BottleneckRecord] = field(default_factory=list)
    layer_count: int | None = None
    time_share: float | None = None


def _groups(data: ReportData, b: Baseline) -> tuple[dict[str, _Group], str]:
    """Class → its layers, from the recorded classes, else derived from the per-layer verdicts."""
    groups: dict[str, _Group] = {}
    ranked_by = ""
    classes = b.bottleneck_classes
    if classes is not None:
        ranked_by = classes.ranked_by
        for g in classes.groups:
            # An older file listed each class's layers without counting them; planner.results.schema upgrades it to
            # groups without `ranked_by` (which the current form always states): its count is the default, not a fact.
            groups[_canonical(g.kind)] = _Group(list(g.top), g.layer_count if ranked_by else None,
                                                g.time_share)
    if groups:
        return groups, ranked_by
    # No classes recorded: derive them from the per-layer verdicts, which carry the same bound.
    for layer in b.layers:
        bound = figdata.layer_bound(data, layer)
        if bound:
            groups.setdefault(_canonical(bound), _Group()).entries.append(BottleneckRecord(
                layer=figdata.layer_key(layer), type=layer.type, time_ms=layer.time_ms, time_share=layer.time_share))
    for group in groups.values():
        group.entries.sort(key=lambda e: -(e.time_ms or 0.0))
    return groups, "measured time (derived from the layer verdicts)" if groups else ""


def _entry_line(entry: BottleneckRecord) -> str:
    timing = []
    if entry.time_ms is not None:
        timing.append(fmt.ms(entry.time_ms))
    if entry.time_share is not None:
        timing.append(f"{fmt.pct(entry.time_share)} of layer time")
    line = (f"- `{entry.layer or 'unnamed layer'}`" + (f" ({entry.type})" if entry.type else "")
            + (f", {', '.join(timing)}" if timing else ""))
    return line + (f": {entry.cause}" if entry.cause else "")


def _model_lines(data: ReportData, bn: VerdictRecord | None) -> list[str]:
    if bn is None or not bn.bound:
        why = (bn.explanation if bn is not None else "") or data.missing("the roofline analysis")
        return [f"Whole-model verdict: not measured ({why}).", ""]
    facts = []
    if bn.attained_flops_per_s is not None:
        facts.append(f"attains {fmt.flop_rate(bn.attained_flops_per_s)}")
    efficiency = bn.efficiency
    warning = bn.ceiling_warning
    if efficiency is not None and efficiency > 1.0 and not warning:
        # An older results.json may hold an efficiency above 100%: that is a wrong ceiling, not a fact.
        warning = EXCEEDED_WARNING
    if efficiency is not None and not warning:
        facts.append(f"{fmt.pct(efficiency)} of its roofline bound")
    measured = bn.measured_time_s
    times = []
    for value, label in ((bn.compute_time_s, "compute floor"), (bn.memory_time_s, "memory floor"),
                         (measured, "measured")):
        if value is not None:
            # A floor above the measured time is a wrong ceiling; the floor can be no longer than what ran.
            times.append(f"{label} {fmt.seconds(min(value, measured) if measured else value)}")
    unstable = not bn.stable
    lines = [f"**Whole model: {bn.bound}-bound{' (unstable)' if unstable else ''}.**"
             + (" It " + ", ".join(facts) + "." if facts else "")
             + (" Times: " + "; ".join(times) + "." if times else "")]
    if warning:
        lines += ["", f"Warning: {warning}."]
    if unstable:
        lines += ["", f"This verdict is unstable: {bn.unstable_reason or 'the measurement was not stable'}."]
    if bn.bound == "overhead" and bn.overhead_evidence:
        lines += ["", f"Evidence of overhead: {bn.overhead_evidence}."]
    if bn.explanation:
        lines += ["", f"> {bn.explanation}"]
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Bottlenecks section."""
    lines = ["## Bottlenecks", ""]
    b = data.run.baseline
    if b is None:
        return lines + [f"Bottlenecks: {data.missing('profiling the baseline')}.", ""]
    lines += _model_lines(data, b.bottleneck)
    lines += figdata.figure_block(data, figdata.ROOFLINE) + [""]
    groups, ranked_by = _groups(data, b)
    lines += ["### Layers by bottleneck class", ""]
    if not groups:
        return lines + ["No per-layer verdicts were recorded, so layers cannot be classified.", ""]
    if ranked_by:
        lines += [f"Each class lists its layers by {ranked_by}.", ""]
    known = {key for key, _, _ in CLASSES}
    extra = [(key, key.capitalize(), "") for key in groups if key not in known]
    for key, heading, fixes in list(CLASSES) + extra:
        group = groups.get(key, _Group())
        facts = []
        if group.layer_count is not None:
            facts.append(f"{fmt.number(group.layer_count)} layer calls")
        if group.time_share is not None:
            facts.append(f"{fmt.pct(group.time_share)} of layer time")
        lines.append(f"#### {heading}" + (f" ({', '.join(facts)})" if facts else ""))
        lines.append("")
        if fixes:
            lines += [f"*{fixes[0].upper()}{fixes[1:]}.*", ""]
        lines += [_entry_line(e) for e in group.entries] if group.entries else ["- none"]
        lines.append("")
    return lines
