"""Environment: versions, thread settings and dates that the numbers depend on."""

from __future__ import annotations

from collections.abc import Sequence

from planner import units
from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import record_text
from planner.results import CandidateResult, names
from planner.results.audit import MeasurementAudit, load_summary, reproducibility
from planner.results.context import PlanResources
from planner.results.values import LatencyStats


def render(data: ReportData) -> list[str]:
    """The Environment section."""
    lines = ["## Environment", ""]
    run = data.run
    env = run.environment
    facts = []
    if env is not None:
        facts += [f"- {label}: {value}" for value, label in ((env.planner, "planner"), (env.python, "Python"),
                                                             (env.platform, "platform")) if value]
    if not (env is not None and env.planner) and run.planner_version:
        facts.append(f"- planner: {run.planner_version}")
    facts.append(f"- results.json schema version: {fmt.number(run.schema_version)}")
    facts.append(f"- quick mode: {'yes' if run.quick else 'no'}")
    if env is not None and env.date:
        facts.append(f"- started: {env.date}")
    if run.finished:
        facts.append(f"- finished: {run.finished}")
    facts += _resources(env.resources if env is not None else None, run.candidates)
    lines += facts + [""]
    packages = env.packages if env is not None else {}
    if packages:
        lines += fmt.table(["Package", "Version"],
                           [[name, v if v else "not installed"] for name, v in packages.items()])
        lines.append("")
    variables = env.env if env is not None else {}
    lines.append("Environment variables that size thread pools or pick devices: "
                 + ("; ".join(f"`{k}={v}`" for k, v in variables.items()) if variables else "none set")
                 + ".")
    # The baseline's thread settings stay a JSON object in the typed baseline (a runtime's own names).
    recorded = run.baseline.threads if run.baseline is not None else {}
    threads = {k: v for k, v in recorded.items() if v not in (None, [], "")}
    if threads:
        lines.append("Baseline thread settings: " + record_text(threads)
                     + ". Each candidate's own settings are listed under All candidates.")
    return lines + [""] + _conditions(data)


def _resources(res: PlanResources | None, candidates: Sequence[CandidateResult]) -> list[str]:
    """The memory and cores the plan ran under, and the most memory its process tree took ([] when not recorded)."""
    lines = []
    if res is not None and (res.memory_limit_bytes is not None or res.cores is not None):
        limit, source, cores = res.memory_limit_bytes, res.limit_source, res.cores
        if limit is None:
            memory = "an unknown amount of memory"
        elif source.startswith("cgroup"):
            memory = f"a {units.size(limit)} memory limit ({source})"
        else:
            memory = f"{units.size(limit)} of RAM (no cgroup memory limit)"
        line = f"- planned under {memory}"
        if cores is not None:
            line += f", {fmt.number(cores)} usable core{'s' if cores != 1 else ''}"
        if res.available_bytes is not None:
            line += f"; {units.size(res.available_bytes)} of it free when the plan started"
        lines.append(line)
    if res is not None and res.peak_bytes is not None:
        how = [res.peak_basis] if res.peak_basis else []
        if res.peak_processes:
            how.append(f"{fmt.number(res.peak_processes)} processes at the peak")
        line = (f"- peak memory of the planner's process tree (the planner, its workers and what they start): "
                f"{units.size(res.peak_bytes)}" + (f" ({'; '.join(how)})" if how else ""))
        if res.peak_file_bytes:
            line += (f", besides up to {units.size(res.peak_file_bytes)} of mapped library files, which the kernel "
                     "can drop and re-read")
        lines.append(line)
    else:
        # Results finished before the plan-wide peak was recorded still carry each measurement's own.
        measured = [(c.tree_peak_bytes, names.title(c)) for c in candidates if c.tree_peak_bytes is not None]
        if measured:
            peak, label = max(measured)
            lines.append(f"- peak memory of the planner's process tree while measuring (its processes' own memory, "
                         f"mapped library files not counted): {units.size(peak)} (while measuring {label})")
    if res is not None and (res.cgroup_peak_bytes is not None or res.oom_kills is not None):
        parts = []
        if res.cgroup_peak_bytes is not None:
            parts.append(f"peaked at {units.size(res.cgroup_peak_bytes)} (page cache included)")
        kills = res.oom_kills
        if kills is not None:
            parts.append("no process was killed by the out-of-memory killer" if kills == 0 else
                         f"the out-of-memory killer ended {fmt.number(kills)} process{'es' if kills != 1 else ''}")
        lines.append("- the plan's own cgroup " + "; ".join(parts))
    return lines


_AUDITED = ("other processes' CPU use (sampled from /proc/stat while timing, not the load average), the CPU "
            "quota and affinity against the threads used, SMT, the frequency governor and clock, thermal "
            "throttling (and a board's power mode or a GPU's clocks where present), and whether the weights fit "
            "in the last-level cache")


def _conditions(data: ReportData) -> list[str]:
    """What the machine was doing while each number was timed, and whether the numbers can be trusted."""
    baseline = data.run.baseline
    rows: list[tuple[str, MeasurementAudit | None, LatencyStats | None]] = [
        (names.title(c), c.audit, c.latency_ms) for c in data.run.candidates]
    if not rows and baseline is not None:
        rows = [(names.baseline_title(baseline), baseline.audit, baseline.latency_ms)]
    audits = [(label, audit) for label, audit, latency in rows if latency is not None]
    if not any(audit for _, audit in audits):
        return ["Measurement conditions: not audited (an older planner made these results), so whether other "
                "programs ran while the numbers were timed is not known.", ""]
    lines = ["### Measurement conditions", "", f"Each measurement was audited while it was timed: {_AUDITED}.", ""]
    repro = reproducibility(rows)
    disturbed = [(label, audit) for label, audit in audits if audit is not None and audit.disturbed]
    if disturbed:
        lines += ["**These numbers were taken under load and may not reproduce.** The measurements below were "
                  "disturbed while they were timed; re-measured on an idle machine they can differ by far more "
                  "than their spread suggests, and the ranking with them:", ""]
        lines += [f"- {fmt.cell(label)}: {'; '.join(audit.issues)}" for label, audit in disturbed]
        lines.append("")
    else:
        lines += ["No interference was seen: no other process took a significant share of the CPU, no "
                  "measurement ran more threads than usable cores, and no throttling was seen.", ""]
    if repro.unstable:
        lines += ["These measurements could not pin their median, so a re-measure may differ noticeably: "
                  + "; ".join(repro.unstable) + ". A full run (not --quick) takes more samples.", ""]
    if baseline is not None and baseline.audit is not None:
        lines += fmt.table(["While the baseline was timed", "Reading"], _audit_rows(baseline.audit))
        lines.append("")
    return lines


def _audit_rows(audit: MeasurementAudit) -> list[list[str]]:
    rows = [["other processes' load", load_summary(audit)]]
    rows += [[fact.name, fact.value] for fact in audit.facts]
    fits = audit.weights_fit_llc
    if fits is not None:
        rows.append(["weights vs last-level cache",
                     f"{units.size(audit.weights_bytes)} {'fit in' if fits else 'exceed'} "
                     f"{units.size(audit.llc_bytes)}"
                     + ("; a timing loop keeps them cached, so a cold first call is slower" if fits else "")])
    elif audit.llc_bytes:
        rows.append(["weights vs last-level cache", f"weights size not known; last-level cache "
                                                    f"{units.size(audit.llc_bytes)}"])
    return [[fmt.cell(a), fmt.cell(b)] for a, b in rows]
