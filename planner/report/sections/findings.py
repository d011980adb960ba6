"""Architecture findings: hardware-unfriendly patterns, ranked by estimated impact, with advice."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, text


def evidence_text(evidence: dict) -> str:
    """A finding's evidence numbers as 'name value; ...'."""
    return "; ".join(f"{k.replace('_', ' ')} {fmt.number(v)}" for k, v in evidence.items())


def impact_text(finding: dict) -> str:
    """The estimated impact with its basis, always labelled as an estimate."""
    basis = text(finding.get("impact_basis")) or "basis not recorded"
    if finding.get("impact") is None:
        return f"not estimated ({basis})"
    return f"estimate: {fmt.pct(finding['impact'])} — {basis}"


def render(data: ReportData) -> list[str]:
    """The Architecture findings section."""
    lines = ["## Architecture findings", ""]
    if not data.baseline:
        return lines + [f"Findings: {data.missing('profiling the baseline')}.", ""]
    if "findings" not in data.baseline:
        return lines + [f"Findings: {data.missing('the architecture lint')}.", ""]
    findings = data.findings
    if not findings:
        return lines + ["The architecture lint found no hardware-unfriendly pattern in this model.", ""]
    lines += ["Ranked by estimated impact. Impacts are estimates from the profile, not measurements: "
              "acting on them means changing (and usually retraining) the model.", ""]
    for i, f in enumerate(findings, 1):
        title = text(f.get("title")) or text(f.get("id")) or "finding"
        severity = text(f.get("severity")) or "unrated"
        lines.append(f"{i}. **{title}** — severity {severity}; {impact_text(f)}")
        layers = [f"`{x}`" for x in as_list(f.get("layers"))]
        if layers:
            lines.append(f"   - Layers: {', '.join(layers)}")
        evidence = as_dict(f.get("evidence"))
        if evidence:
            lines.append(f"   - Evidence: {evidence_text(evidence)}")
        if f.get("advice"):
            lines.append(f"   - Advice: {text(f['advice'])}")
    return lines + [""]
