"""Requirements: what was asked (and where each value came from), met or missed, by how much."""

from __future__ import annotations

from typing import Any

from planner.report import fmt
from planner.report.data import ReportData
from planner.results.decisions import CheckStatus, RequirementCheck, Requirements


def _asked(reqs: Requirements) -> tuple[tuple[str, str, Any], ...]:
    """(field, name in the report, value) for each requirement field; the field's name picks the value's unit."""
    return (("latency_ms", "latency", reqs.latency_ms),
            ("latency_percentile", "latency percentile", reqs.latency_percentile),
            ("min_throughput", "minimum throughput", reqs.min_throughput),
            ("memory_budget_bytes", "memory budget", reqs.memory_budget_bytes),
            ("model_size_budget_bytes", "model size budget", reqs.model_size_budget_bytes),
            ("accuracy_budget", "accuracy drop budget", reqs.accuracy_budget),
            ("quantization", "quantization allowed", reqs.quantization), ("tier", "device tier", reqs.tier))


_VERDICTS = {CheckStatus.MET: "met", CheckStatus.MET_AT_P50: "met at p50 only", CheckStatus.MISSED: "missed",
             CheckStatus.IMPOSSIBLE: "cannot be met", CheckStatus.NOT_MEASURED: "not measured",
             CheckStatus.NOT_JUDGED: "not judged", CheckStatus.NOT_ESTABLISHED: "not established"}


def value_text(name: str, value: Any) -> str:
    """A requirement's target or measured value; text is kept, numbers get the unit the name implies."""
    if value is None:
        return fmt.NOT_MEASURED
    if isinstance(value, str):
        # A StrEnum (the percentile, the device tier) is its value.
        return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    n = name.lower()
    if "percentile" in n:
        return f"p{fmt.number(value)}"
    if "latency" in n:
        return fmt.ms(value)
    if "throughput" in n:
        return fmt.rate(value)
    if "memory" in n or "size" in n or n.endswith("bytes"):
        return fmt.size(value)
    if "accuracy" in n:
        return fmt.accuracy(value)
    return fmt.number(value)


def verdict(check: RequirementCheck) -> str:
    """'met', 'met at p50 only', 'missed', 'cannot be met', 'not measured' or 'not judged'."""
    return _VERDICTS[check.status]


def margin(check: RequirementCheck) -> str:
    """How far the measurement is from the target: the check's own words, else why there are none."""
    if check.margin:
        return check.margin
    # The target and measurement are text ('< 50 ms p95'), so without the check's words no margin is computed.
    return "not measured" if check.met is None else "not computable (a value is missing)"


def fully_met(check: RequirementCheck) -> bool:
    """Whether the check was met at the target as written (not only on the median)."""
    return check.status == CheckStatus.MET


def unjudged(check: RequirementCheck) -> bool:
    """Whether the check has no verdict at its target as written: not measured, not judged, or met on p50 only."""
    return check.met is None or check.status == CheckStatus.MET_AT_P50


def name_of(check: RequirementCheck) -> str:
    """The requirement's name in words."""
    return (check.name or "requirement").replace("_", " ")


def sentence(check: RequirementCheck) -> str:
    """One clause for the summary: name, target, verdict and margin."""
    target = value_text(name_of(check), check.target)
    return f"{name_of(check)}" + (f" {target}" if target else "") + f" {verdict(check)} ({margin(check)})"


def checks(data: ReportData) -> tuple[list[RequirementCheck], str]:
    """The requirement checks, and what they were measured on ('' for the run's own checks)."""
    if data.run.requirement_checks:
        return list(data.run.requirement_checks), ""
    # Without the run's final checks, the plan's checks of the baseline are the best evidence.
    planned = list(data.run.plan.checks) if data.run.plan is not None else []
    return planned, ("the baseline (the run's final checks are "
                     + data.missing("checking the requirements") + ")") if planned else ""


def render(data: ReportData) -> list[str]:
    """The Requirements section."""
    lines = ["## Requirements", ""]
    reqs = data.run.requirements
    if reqs is not None:
        rows = [[label, "not set" if value is None else value_text(key, value), reqs.sources.get(key) or "—"]
                for key, label, value in _asked(reqs)]
        lines += ["What the deployment was asked to meet:", ""]
        lines += fmt.table(["Requirement", "Value", "Source"], rows) + [""]
    else:
        lines += [f"Requirements: {data.missing('reading the requirements')}.", ""]
    found, subject = checks(data)
    if not found:
        return lines + [f"Met or missed: {data.missing('checking the requirements')}.", ""]
    if subject:
        lines += [f"Checked against {subject}.", ""]
    rows = [[name_of(c), value_text(name_of(c), c.target), value_text(name_of(c), c.measured),
             f"**{verdict(c)}**" if c.met is False else verdict(c), margin(c), c.source or "—"] for c in found]
    lines += fmt.table(["Requirement", "Target", "Measured", "Verdict", "By how much", "Source"], rows)
    missed = [name_of(c) for c in found if c.met is False]
    open_checks = [name_of(c) for c in found if unjudged(c)]
    lines.append("")
    if missed:
        lines.append("Missed: " + ", ".join(missed) + ".")
    if open_checks:
        lines.append("Not judged, because the number was not measured: " + ", ".join(open_checks) + ".")
    if not missed and not open_checks:
        lines.append("Every checked requirement is met.")
    return lines + [""]
