"""Environment: versions, thread settings and dates that the numbers depend on."""

from __future__ import annotations

from planner.report import fmt
from planner.report.data import ReportData, as_dict, text


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
                     + ". Each candidate's own settings are listed under Candidates.")
    return lines + [""]
