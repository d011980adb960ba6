"""Architecture findings: hardware-unfriendly patterns, ranked by estimated impact, with advice."""

from __future__ import annotations

from typing import Any, Mapping

from planner.report import fmt
from planner.report.data import ReportData
from planner.results.analysis import Finding


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """A finding's evidence numbers as 'name value; ...'."""
    return "; ".join(f"{k.replace('_', ' ')} {fmt.number(v)}" for k, v in evidence.items())


def impact_text(finding: Finding) -> str:
    """The estimated impact with its basis, always labelled as an estimate."""
    return f"estimate: {fmt.pct(finding.impact)} — {finding.impact_basis or 'basis not recorded'}"


def render(data: ReportData) -> list[str]:
    """The Architecture findings section."""
    lines = ["## Architecture findings", ""]
    if data.run.baseline is None:
        return lines + [f"Findings: {data.missing('profiling the baseline')}.", ""]
    findings = data.sorted_findings
    if not findings:
        return lines + ["The architecture lint found no hardware-unfriendly pattern in this model.", ""]
    lines += ["Ranked by estimated impact. Impacts are estimates from the profile, not measurements: "
              "acting on them means changing (and usually retraining) the model.", ""]
    for i, f in enumerate(findings, 1):
        lines.append(f"{i}. **{f.title or f.id or 'finding'}** — severity {f.severity}; {impact_text(f)}")
        if f.layers:
            lines.append(f"   - Layers: {', '.join(f'`{x}`' for x in f.layers)}")
        if f.evidence:
            lines.append(f"   - Evidence: {evidence_text(f.evidence)}")
        if f.advice:
            lines.append(f"   - Advice: {f.advice}")
    return lines + [""]
