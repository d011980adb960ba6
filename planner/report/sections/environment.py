"""Environment: versions, thread settings and dates that the numbers depend on."""

from __future__ import annotations

from planner import units
from planner.report import fmt
from planner.report.data import ReportData, as_dict, text
from planner.results.audit import MeasurementAudit, audit_of, load_summary, reproducibility


def render(data: ReportData) -> list[str]:
    """The Environment section."""
    lines = ["## Environment", ""]
    env = as_dict(data.results.get("environment"))
    r = data.results
    facts = []
    for key, label in (("planner", "planner"), ("python", "Python"), ("platform", "platform")):
        if env.get(key):
            facts.append(f"- {label}: {text(env[key])}")
    if not env.get("planner") and r.get("planner_version"):
        facts.append(f"- planner: {text(r['planner_version'])}")
    if r.get("schema_version") is not None:
        facts.append(f"- results.json schema version: {fmt.number(r['schema_version'])}")
    if r.get("quick") is not None:
        facts.append(f"- quick mode: {'yes' if r['quick'] else 'no'}")
    if env.get("date"):
        facts.append(f"- started: {text(env['date'])}")
    if r.get("finished"):
        facts.append(f"- finished: {text(r['finished'])}")
    facts += _resources(as_dict(env.get("resources")), data.candidates)
    if not env and not facts:
        return lines + [f"Environment: {data.missing('recording the environment')}.", ""]
    lines += facts + [""]
    packages = as_dict(env.get("packages"))
    if packages:
        lines += fmt.table(["Package", "Version"],
                           [[name, text(v) if v else "not installed"] for name, v in packages.items()])
        lines.append("")
    variables = as_dict(env.get("env"))
    lines.append("Environment variables that size thread pools or pick devices: "
                 + ("; ".join(f"`{k}={v}`" for k, v in variables.items()) if variables else "none set")
                 + ".")
    threads = {k: v for k, v in as_dict(data.baseline.get("threads")).items() if v not in (None, [], "")}
    if threads:
        lines.append("Baseline thread settings: " + "; ".join(f"{k} {fmt.number(v)}" for k, v in threads.items())
                     + ". Each candidate's own settings are listed under All candidates.")
    return lines + [""] + _conditions(data)


def _resources(res: dict, candidates: list[dict]) -> list[str]:
    """The memory and cores the plan ran under, and the most memory its process tree took ([] when not recorded)."""
    lines = []
    limit, source, cores = res.get("memory_limit_bytes"), text(res.get("limit_source")), res.get("cores")
    if limit is not None or cores is not None:
        if limit is None:
            memory = "an unknown amount of memory"
        elif source.startswith("cgroup"):
            memory = f"a {units.size(limit)} memory limit ({source})"
        else:
            memory = f"{units.size(limit)} of RAM (no cgroup memory limit)"
        line = f"- planned under {memory}"
        if cores is not None:
            line += f", {fmt.number(cores)} usable core{'s' if cores != 1 else ''}"
        if res.get("available_bytes") is not None:
            line += f"; {units.size(res['available_bytes'])} of it free when the plan started"
        lines.append(line)
    if res.get("peak_bytes") is not None:
        how = [text(res.get("peak_basis"))] if res.get("peak_basis") else []
        if res.get("peak_processes"):
            how.append(f"{fmt.number(res['peak_processes'])} processes at the peak")
        line = (f"- peak memory of the planner's process tree (the planner, its workers and what they start): "
                f"{units.size(res['peak_bytes'])}" + (f" ({'; '.join(how)})" if how else ""))
        if res.get("peak_file_bytes"):
            line += (f", besides up to {units.size(res['peak_file_bytes'])} of mapped library files, which the kernel "
                     "can drop and re-read")
        lines.append(line)
    else:
        # Results finished before the plan-wide peak was recorded still carry each measurement's own.
        measured = [(c.get("tree_peak_bytes"), text(c.get("label"))) for c in candidates
                    if isinstance(c.get("tree_peak_bytes"), int)]
        if measured:
            peak, label = max(measured)
            lines.append(f"- peak memory of the planner's process tree while measuring (its processes' own memory, "
                         f"mapped library files not counted): {units.size(peak)} (while measuring {label})")
    if res.get("cgroup_peak_bytes") is not None or res.get("oom_kills") is not None:
        parts = []
        if res.get("cgroup_peak_bytes") is not None:
            parts.append(f"peaked at {units.size(res['cgroup_peak_bytes'])} (page cache included)")
        kills = res.get("oom_kills")
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
    rows = [(text(c.get("label")) or "baseline", c.get("audit"), c.get("latency_ms"))
            for c in data.candidates if isinstance(c, dict)]
    if not rows and data.baseline:
        rows = [(text(data.baseline.get("runtime")) or "baseline", data.baseline.get("audit"),
                 data.baseline.get("latency_ms"))]
    audits = [(label, audit_of(raw)) for label, raw, latency in rows if latency]
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
    baseline = audit_of(data.baseline.get("audit")) if data.baseline else None
    if baseline is not None:
        lines += fmt.table(["While the baseline was timed", "Reading"], _audit_rows(baseline))
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
