"""Architecture findings: hardware-unfriendly patterns, ranked by estimated impact, with advice."""

from __future__ import annotations

from typing import Any, Mapping

from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import record_text
from planner.results.analysis import Finding

EVIDENCE_WORDS = {
    "est_3x3_stack_flop_ratio": "FLOPs of a 3x3 stack over the large kernel's (estimate)",
    "est_note": "note",
    "ms_per_layer_call": "ms per layer call",
    "idle_lane_share": "share of vector lanes idle",
    "suggested_channels": "suggested channel counts",
    "convs_at_stem_resolution": "convolutions at the stem's resolution",
    "last_conv_side_ratio": "last conv's side over the input's",
    "stride1_pools": "stride-1 pools",
    "fixed_by_model_io": "fixed by the model's inputs and outputs",
    "not_foldable_reason": "why not foldable",
    "tensor_core_ready": "tensor-core ready",
    "ready_rule": "ready means",
    "overhead_evidence": "overhead evidence",
    "roofline_floor_ms": "roofline floor (ms)",
    "batchnorm_bytes_moved": "bytes BatchNorm moves",
    "batchnorm_time_ms": "BatchNorm time (ms)",
}
"""Words for the architecture lint's evidence fields (planner.analysis.rules); the rest read with underscores as
spaces."""


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """A finding's evidence numbers as 'name value; ...', each name in words."""
    return record_text(evidence, EVIDENCE_WORDS)


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
