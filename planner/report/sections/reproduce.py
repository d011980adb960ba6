"""Reproduce: the exact command behind every measured candidate, and the plan itself."""

from __future__ import annotations

import shlex

from planner.report.data import ReportData, as_dict, text
from planner.report.fmt import real
from planner.report.sections.candidates import label
from planner.results.view import inputs_cli_args

# Requirement fields given as flags, the flag that sets each, and the unit scale the flag takes.
_FLAGS: tuple[tuple[str, str, float], ...] = (
    ("latency_ms", "--latency-ms", 1.0), ("latency_percentile", "--latency-percentile", 1.0),
    ("min_throughput", "--min-throughput", 1.0), ("memory_budget_bytes", "--memory-mb", 1e6),
    ("model_size_budget_bytes", "--model-size-mb", 1e6), ("accuracy_budget", "--accuracy-drop", 1.0),
)


def plan_command(data: ReportData) -> str | None:
    """The `planner plan` command that re-runs this plan, from what results.json records."""
    source = text(data.model.get("source"))
    if not source:
        return None
    parts = ["planner", "plan", "--model", source, *inputs_cli_args(data.inputs)]
    if text(data.model.get("kind")) == "python":
        parts.append("--trust-code")  # a Python model file is only run with it
    if data.results.get("target"):
        parts += ["--target", text(data.results["target"])]
    if data.results.get("quick") is True:
        parts.append("--quick")
    reqs = data.requirements
    sources = as_dict(reqs.get("sources"))
    for key, flag, scale in _FLAGS:
        value = real(reqs.get(key))
        if value is not None and text(sources.get(key)) == "flag":
            parts += [flag, f"{value / scale:g}"]
    if any(text(v) == "file" for v in sources.values()):
        parts += ["--requirements", "REQUIREMENTS.toml"]
    return shlex.join(parts)


def render(data: ReportData) -> list[str]:
    """The Reproduce section."""
    lines = ["## Reproduce", ""]
    command = plan_command(data)
    if command:
        lines += ["The whole plan (requirement flags as recorded"
                  + ("; REQUIREMENTS.toml stands for the requirements file you used" if "REQUIREMENTS.toml"
                     in command else "") + "):", "", "```sh", command, "```", ""]
    entries = list(data.candidates) or ([data.baseline] if data.baseline else [])
    if not entries:
        return lines + [f"Candidates: {data.missing('measuring candidates')}.", ""]
    lines += ["Each candidate re-measured on its own with `planner bench`:", ""]
    seen: set[str] = set()
    for cand in entries:
        name = label(cand) if cand is not data.baseline else (text(cand.get("runtime")) or "baseline")
        status = text(cand.get("status")) or ("ok" if cand is data.baseline else "unknown")
        cmd = text(cand.get("reproduce"))
        lines.append(f"**{name}** ({status})")
        lines.append("")
        if not cmd:
            lines += ["No reproduce command was recorded for this candidate.", ""]
            continue
        if cmd in seen:
            lines += ["Same command as above.", ""]
            continue
        seen.add(cmd)
        lines += ["```sh", cmd, "```", ""]
    return lines
