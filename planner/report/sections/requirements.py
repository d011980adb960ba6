"""Requirements: what was asked (and where each value came from), met or missed, by how much."""

from __future__ import annotations

from typing import Any

from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, first, text
from planner.report.fmt import real

# The requirement fields results.json carries, with their names in the report.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("latency_ms", "latency"), ("latency_percentile", "latency percentile"),
    ("min_throughput", "minimum throughput"), ("memory_budget_bytes", "memory budget"),
    ("model_size_budget_bytes", "model size budget"), ("accuracy_budget", "accuracy drop budget"),
    ("quantization", "quantization allowed"), ("tier", "device tier"),
)

_VERDICTS = {"met": "met", "met-at-p50": "met at p50 only", "missed": "missed", "impossible": "cannot be met",
             "not-measured": "not measured", "not_measured": "not measured", "not-judged": "not judged"}

# A target met only on the median (its own percentile unmeasured) is not plainly met: it is listed with
# the requirements that were not judged, never under "met".
_MET_ON_MEDIAN = "met-at-p50"


def value_text(name: str, value: Any) -> str:
    """A requirement's target or measured value; text is kept, numbers get the unit the name implies."""
    if value is None:
        return fmt.NOT_MEASURED
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) or "none"
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


def verdict(check: dict) -> str:
    """'met', 'met at p50 only', 'missed', 'cannot be met', 'not measured' or 'not judged'."""
    status = text(check.get("status"))
    if status in _VERDICTS:
        return _VERDICTS[status]
    if status:
        # A status this report does not know yet is said in its own words, never read as met from `met`.
        return status.replace("-", " ").replace("_", " ")
    met = check.get("met")
    return "met" if met is True else "missed" if met is False else "not measured"


def margin(check: dict) -> str:
    """How far the measurement is from the target: the check's own words, else computed."""
    own = text(first(check, "margin", "text"))
    if own:
        return own
    target, measured = real(check.get("target")), real(check.get("measured"))
    if check.get("met") is None:
        return "not measured" if measured is None else "not judged"
    if target is None or measured is None or target == 0:
        return "not computable (a value is missing)"
    rel = abs(measured - target) / abs(target)
    return f"met with {fmt.pct(rel)} headroom" if check.get("met") else f"missed by {fmt.pct(rel)}"


def fully_met(check: dict) -> bool:
    """Whether the check was met at the target as written (not only on the median)."""
    status = text(check.get("status"))
    return status == "met" if status else check.get("met") is True


def unjudged(check: dict) -> bool:
    """Whether the check has no verdict at its target as written: not measured, not judged, or met on p50 only."""
    return check.get("met") is None or text(check.get("status")) == _MET_ON_MEDIAN


def name_of(check: dict) -> str:
    """The requirement's name in words."""
    return (text(first(check, "name", "id")) or "requirement").replace("_", " ")


def sentence(check: dict) -> str:
    """One clause for the summary: name, target, verdict and margin."""
    target = value_text(name_of(check), check.get("target")) if check.get("target") is not None else ""
    return f"{name_of(check)}" + (f" {target}" if target else "") + f" {verdict(check)} ({margin(check)})"


def checks(data: ReportData) -> tuple[list[dict], str]:
    """The requirement checks, and what they were measured on ('' for the run's own checks)."""
    found = [c for c in as_list(data.results.get("requirement_checks")) if isinstance(c, dict)]
    if found:
        return found, ""
    # Without the run's final checks, the plan's checks of the baseline are the best evidence.
    planned = [c for c in as_list(data.plan.get("checks")) if isinstance(c, dict)]
    return planned, ("the baseline (the run's final checks are "
                     + data.missing("checking the requirements") + ")") if planned else ""


def render(data: ReportData) -> list[str]:
    """The Requirements section."""
    lines = ["## Requirements", ""]
    reqs = data.requirements
    sources = as_dict(reqs.get("sources"))
    if reqs:
        rows = [[label, "not set" if reqs.get(key) is None else value_text(key, reqs.get(key)),
                 text(sources.get(key)) or "—"]
                for key, label in _FIELDS if key in reqs]
        if rows:
            lines += ["What the deployment was asked to meet:", ""]
            lines += fmt.table(["Requirement", "Value", "Source"], rows) + [""]
    else:
        lines += [f"Requirements: {data.missing('reading the requirements')}.", ""]
    found, subject = checks(data)
    if not found:
        return lines + [f"Met or missed: {data.missing('checking the requirements')}.", ""]
    if subject:
        lines += [f"Checked against {subject}.", ""]
    rows = [[name_of(c), value_text(name_of(c), c.get("target")), value_text(name_of(c), c.get("measured")),
             f"**{verdict(c)}**" if c.get("met") is False else verdict(c), margin(c),
             text(c.get("source")) or "—"] for c in found]
    lines += fmt.table(["Requirement", "Target", "Measured", "Verdict", "By how much", "Source"], rows)
    missed = [name_of(c) for c in found if c.get("met") is False]
    open_checks = [name_of(c) for c in found if unjudged(c)]
    lines.append("")
    if missed:
        lines.append("Missed: " + ", ".join(missed) + ".")
    if open_checks:
        lines.append("Not judged, because the number was not measured: " + ", ".join(open_checks) + ".")
    if not missed and not open_checks:
        lines.append("Every checked requirement is met.")
    return lines + [""]
