"""Reproduce: the exact command behind every measured candidate, and the plan itself."""

from __future__ import annotations

import shlex

from planner.report.data import ReportData
from planner.results import names
from planner.results.decisions import SOURCE_FILE, SOURCE_FLAG, Requirements
from planner.results.view import inputs_cli_args

# Requirement fields given as flags, the flag that sets each, and the unit scale the flag takes (None: as text).
_FLAGS: tuple[tuple[str, str, float | None], ...] = (
    ("latency_percentile", "--latency-percentile", None),
    ("latency_ms", "--latency-ms", 1.0), ("min_throughput", "--min-throughput", 1.0),
    ("memory_budget_bytes", "--memory-mb", 1e6), ("model_size_budget_bytes", "--model-size-mb", 1e6),
    ("accuracy_budget", "--accuracy-drop", 1.0),
)


def _requirement_args(reqs: Requirements) -> list[str]:
    """The flags that set the requirements given as flags, and the file's stand-in where a file gave some."""
    args: list[str] = []
    for key, flag, scale in _FLAGS:
        value = getattr(reqs, key)
        if value is not None and reqs.source(key) == SOURCE_FLAG:
            args += [flag, str(value) if scale is None else f"{value / scale:g}"]
    if any(origin == SOURCE_FILE for origin in reqs.sources.values()):
        args += ["--requirements", "REQUIREMENTS.toml"]
    return args


def plan_command(data: ReportData) -> str | None:
    """The `planner plan` command that re-runs this plan, from what results.json records."""
    run = data.run
    model = data.model_record
    if model is None or not model.source:
        return None
    parts = ["planner", "plan", "--model", model.source, *inputs_cli_args(data.model_inputs)]
    if model.kind == "python":
        parts.append("--trust-code")  # a Python model file is only run with it
    if run.target:
        parts += ["--target", run.target]
    if run.quick:
        parts.append("--quick")
    if run.requirements is not None:
        parts += _requirement_args(run.requirements)
    return shlex.join(parts)


def render(data: ReportData) -> list[str]:
    """The Reproduce section."""
    lines = ["## Reproduce", ""]
    command = plan_command(data)
    if command:
        lines += ["The whole plan (requirement flags as recorded"
                  + ("; REQUIREMENTS.toml stands for the requirements file you used" if "REQUIREMENTS.toml"
                     in command else "") + "):", "", "```sh", command, "```", ""]
    # (name, status, command) per candidate; before any candidate, the baseline as it was measured.
    base = data.run.baseline
    entries = [(names.title(c), str(c.status), c.reproduce) for c in data.run.candidates] or (
        [(names.baseline_title(base), "ok", base.reproduce)] if base is not None else [])
    if not entries:
        return lines + [f"Candidates: {data.missing('measuring candidates')}.", ""]
    lines += ["Each candidate re-measured on its own with `planner bench`, run from the plan's folder (where "
              "results.json is: the artifact paths are relative to it):", ""]
    seen: set[str] = set()
    for name, status, cmd in entries:
        if not cmd:
            continue
        lines.append(f"**{name}** ({status})")
        lines.append("")
        if cmd in seen:
            lines += ["Same command as above.", ""]
            continue
        seen.add(cmd)
        lines += ["```sh", cmd, "```", ""]
    unrecorded = [f"{name} ({status})" for name, status, cmd in entries if not cmd]
    if unrecorded:
        lines += ["No command was recorded for: " + ", ".join(unrecorded) + ".", ""]
    return lines
