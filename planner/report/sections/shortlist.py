"""The shortlist: the five fastest measured candidates in one table (what each is in plain words, its precision,
p50 and p95, speedup, fidelity verdict, whether it meets the targets and where its package is), then the decision
figure, latency against fidelity, with the target and the winner marked."""

from __future__ import annotations

from planner.advice.checks import requirement_checks
from planner.report import fidelity_verdict, figdata, fmt, handover
from planner.report.data import ReportData
from planner.report.sections.baseline import PERCENTILE_MIN_SAMPLES
from planner.results import CandidateResult, fidelity_view, names
from planner.results.decisions import CheckStatus

SHORTLIST = 5
"""How many candidates the table shows; evidence.md lists them all."""

DECISION_FIGURE = "decision"
"""The figure the shortlist shows (planner.report.figdata)."""


def _arithmetic(cand: CandidateResult) -> str:
    return cand.declared.arithmetic if cand.declared is not None else ""


def verdict(cand: CandidateResult) -> str:
    """The fidelity verdict in a few words: 'passed (top-1 100%)', 'not established', 'rejected (accuracy 91%)',
    'speed only (new weights)'."""
    if _arithmetic(cand) == "structural":
        return "speed only (new weights, untrained)"
    fid = cand.fidelity
    if fid is None:
        return "not checked"
    shown = (f"accuracy {fmt.accuracy(fid.accuracy)}" if fid.accuracy is not None
             else fidelity_view.agreement_cell(fid))
    shown = "" if shown in ("n/a", "") else f" ({shown})"
    said = fidelity_verdict.verdict(cand)
    return (str(said) if said is not None else str(cand.status)) + shown


def targets(data: ReportData, cand: CandidateResult) -> str:
    """Whether the candidate meets the requirements: 'yes', 'misses latency', 'at p50 only'; '—' with none."""
    reqs = data.run.requirements
    if reqs is None or cand.p50 is None:
        return "—"
    checks = requirement_checks(data.run, reqs, subject=cand)
    missed = [c.name for c in checks if c.status in (CheckStatus.MISSED, CheckStatus.IMPOSSIBLE)]
    if missed:
        return "misses " + ", ".join(n.replace("_", " ") for n in missed)
    if any(c.status == CheckStatus.MET_AT_P50 for c in checks):
        return "at p50 only"
    if any(c.status == CheckStatus.NOT_ESTABLISHED for c in checks):
        return "not established"
    return "yes" if all(c.met for c in checks) else "not all judged"


def targets_are_defaults(data: ReportData) -> bool:
    """Whether every target was the planner's default (the user stated none)."""
    reqs = data.run.requirements
    return reqs is None or not reqs.stated


def shortlisted(data: ReportData) -> list[CandidateResult]:
    """The fastest measured candidates other than the baseline, by p50, the decision always among them."""
    timed = sorted((c for c in data.run.candidates if c.measured and not data.is_reference_cand(c)),
                   key=lambda c: c.p50 or float("inf"))
    top = timed[:SHORTLIST]
    best = data.best_cand
    if best is not None and best in timed and best not in top:
        top[-1] = best
    return top


def _package(data: ReportData, cand: CandidateResult) -> str:
    dep = handover.for_candidate(data, cand)
    return f"`{handover.folder(dep)}/`" if dep is not None else "—"


def render(data: ReportData) -> list[str]:
    """The shortlist table and the decision figure ([] when no candidate was measured)."""
    top = shortlisted(data)
    if not top:
        return []
    best = data.best_cand
    rows = []
    for cand in top:
        name = f"**{names.title(cand)}** (shipped)" if cand is best else names.title(cand)
        p95 = fmt.ms(cand.latency_ms.p95_ms) if cand.latency_ms and cand.latency_ms.p95_ms is not None else "—"
        rows.append([name, cand.precision or "—", fmt.ms(cand.p50), p95, fmt.speedup(data.speedup_of(cand)),
                     verdict(cand), targets(data, cand), _package(data, cand)])
    defaults = " (the planner's defaults: you set none)" if targets_are_defaults(data) else ""
    lines = ["## The fastest candidates", "",
             "The fastest measured configurations, the shipped one marked; every candidate, failed and skipped ones "
             "included, is in Appendix › All candidates.", ""]
    lines += fmt.table(["Candidate", "Precision", "p50", "p95", "Speedup", "Fidelity", f"Meets targets{defaults}",
                        "Package"], rows)
    if any(r[3] == "—" for r in rows):
        lines += ["", f"A p95 of — was not measured: a p95 needs ≥{PERCENTILE_MIN_SAMPLES['p95']} samples."]
    lines.append("")
    if DECISION_FIGURE in figdata.FIGURES:
        lines += figdata.figure_block(data, DECISION_FIGURE) + [""]
    return lines
