"""Bottlenecks: the whole-model roofline verdict and the three bottleneck classes of layers."""

from __future__ import annotations

from planner.hardware.ceiling_notes import EXCEEDED_WARNING
from planner.report import figdata, fmt
from planner.report.data import ReportData, as_dict, as_list, first, text
from planner.report.fmt import real

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


def _groups(data: ReportData) -> tuple[dict[str, dict], str]:
    """Class → {entries, layer_count, time_share} from whichever shape results.json holds."""
    raw = data.baseline.get("bottleneck_classes")
    groups: dict[str, dict] = {}
    ranked_by = ""
    if isinstance(raw, dict) and isinstance(raw.get("groups"), list):
        ranked_by = text(raw.get("ranked_by"))
        for g in raw["groups"]:
            g = as_dict(g)
            groups[_canonical(text(g.get("class")))] = {
                "entries": as_list(g.get("top")), "layer_count": g.get("layer_count"),
                "time_share": g.get("time_share"), "time_ms": g.get("time_ms")}
    elif isinstance(raw, dict):
        for name, entries in raw.items():
            groups[_canonical(str(name))] = {"entries": as_list(entries)}
    if groups:
        return groups, ranked_by
    # No classes recorded: derive them from the per-layer verdicts, which carry the same bound.
    for layer in as_list(data.baseline.get("layers")):
        layer = as_dict(layer)
        bound = text(figdata.layer_verdict(data, layer).get("bound"))
        if bound:
            groups.setdefault(_canonical(bound), {"entries": []})["entries"].append(
                {"layer": figdata.layer_key(layer), "type": layer.get("type"),
                 "time_ms": layer.get("time_ms"), "time_share": layer.get("time_share")})
    for g in groups.values():
        g["entries"].sort(key=lambda e: -(real(e.get("time_ms")) or 0.0))
    return groups, "measured time (derived from the layer verdicts)" if groups else ""


def _entry_line(entry: object) -> str:
    if not isinstance(entry, dict):
        return f"- `{entry}`"
    name = text(first(entry, "layer", "name", "key")) or "unnamed layer"
    kind = text(entry.get("type"))
    timing = []
    if entry.get("time_ms") is not None:
        timing.append(fmt.ms(entry["time_ms"]))
    if entry.get("time_share") is not None:
        timing.append(f"{fmt.pct(entry['time_share'])} of layer time")
    line = f"- `{name}`" + (f" ({kind})" if kind else "") + (f", {', '.join(timing)}" if timing else "")
    cause = text(first(entry, "cause", "reason", "explanation"))
    return line + (f": {cause}" if cause else "")


def _model_lines(data: ReportData) -> list[str]:
    bn = as_dict(data.baseline.get("bottleneck"))
    bound = text(bn.get("bound"))
    if not bound:
        why = text(bn.get("explanation")) or data.missing("the roofline analysis")
        return [f"Whole-model verdict: not measured ({why}).", ""]
    facts = []
    if bn.get("attained_flops_per_s") is not None:
        facts.append(f"attains {fmt.flop_rate(bn['attained_flops_per_s'])}")
    efficiency = real(bn.get("efficiency"))
    warning = text(bn.get("ceiling_warning"))
    if efficiency is not None and efficiency > 1.0 and not warning:
        # An older results.json may hold an efficiency above 100%: that is a wrong ceiling, not a fact.
        warning = EXCEEDED_WARNING
    if efficiency is not None and not warning:
        facts.append(f"{fmt.pct(efficiency)} of its roofline bound")
    measured = real(bn.get("measured_time_s"))
    times = []
    for key, label in (("compute_time_s", "compute floor"), ("memory_time_s", "memory floor"),
                       ("measured_time_s", "measured")):
        value = real(bn.get(key))
        if value is not None:
            # A floor above the measured time is a wrong ceiling; the floor can be no longer than what ran.
            times.append(f"{label} {fmt.seconds(min(value, measured) if measured else value)}")
    unstable = bn.get("stable") is False
    lines = [f"**Whole model: {bound}-bound{' (unstable)' if unstable else ''}.**"
             + (" It " + ", ".join(facts) + "." if facts else "")
             + (" Times: " + "; ".join(times) + "." if times else "")]
    if warning:
        lines += ["", f"Warning: {warning}."]
    if unstable:
        reason = text(bn.get("unstable_reason")) or "the measurement was not stable"
        lines += ["", f"This verdict is unstable: {reason}."]
    if bound == "overhead" and bn.get("overhead_evidence"):
        lines += ["", f"Evidence of overhead: {text(bn['overhead_evidence'])}."]
    if bn.get("explanation"):
        lines += ["", f"> {text(bn['explanation'])}"]
    return lines + [""]


def render(data: ReportData) -> list[str]:
    """The Bottlenecks section."""
    lines = ["## Bottlenecks", ""]
    if not data.baseline:
        return lines + [f"Bottlenecks: {data.missing('profiling the baseline')}.", ""]
    lines += _model_lines(data)
    lines += figdata.figure_block(data, figdata.ROOFLINE) + [""]
    groups, ranked_by = _groups(data)
    lines += ["### Layers by bottleneck class", ""]
    if not groups:
        return lines + ["No per-layer verdicts were recorded, so layers cannot be classified.", ""]
    if ranked_by:
        lines += [f"Each class lists its layers by {ranked_by}.", ""]
    known = {key for key, _, _ in CLASSES}
    extra = [(key, key.capitalize(), "") for key in groups if key not in known]
    for key, heading, fixes in list(CLASSES) + extra:
        group = groups.get(key, {"entries": []})
        facts = []
        if group.get("layer_count") is not None:
            facts.append(f"{fmt.number(group['layer_count'])} layer calls")
        if group.get("time_share") is not None:
            facts.append(f"{fmt.pct(group['time_share'])} of layer time")
        lines.append(f"#### {heading}" + (f" ({', '.join(facts)})" if facts else ""))
        lines.append("")
        if fixes:
            lines += [f"*{fixes[0].upper()}{fixes[1:]}.*", ""]
        entries = group.get("entries") or []
        lines += [_entry_line(e) for e in entries] if entries else ["- none"]
        lines.append("")
    return lines
