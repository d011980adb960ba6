"""The hand-over packages a plan wrote under deploy/ (results.json's `deployments`), as the report reads them:
which candidate each one packages, and the commands that run and check it.

Every package folder is relative to the plan's output folder (where results.json is), so the commands are
written to run from there. Files written before packaging existed have no `deployments`: every reader here
then answers None or [] and the report says so.
"""

from __future__ import annotations

from planner.report.data import ReportData
from planner.results import CandidateResult
from planner.results.values import Deployment

WINNER = "winner"
"""The role of the package that holds the plan's decision (the best-ranked candidate)."""

VERIFY_ALL = "planner verify deploy/"
"""The command that checks every package the plan wrote."""


def deployments(data: ReportData) -> list[Deployment]:
    """Every deployment record, in the order the plan wrote them ([] for older files)."""
    return list(data.run.deployments)


def folder(dep: Deployment) -> str:
    """The package's folder relative to the output folder, without a trailing slash ('' when none was written)."""
    return dep.folder.rstrip("/")


def winner(data: ReportData) -> Deployment | None:
    """The winner's deployment record (written or not), or None when the plan recorded none."""
    return next((d for d in data.run.deployments if d.role == WINNER), None)


def for_candidate(data: ReportData, cand: CandidateResult) -> Deployment | None:
    """The written package of this candidate (matched by its index in the candidate list, else by its label),
    or None when none was written for it."""
    index = data.index_of(cand)
    name = cand.label
    written = [d for d in data.run.deployments if folder(d)]
    # An index alone could point at another candidate in a hand-edited file: a label that disagrees wins.
    by_index = [d for d in written if index is not None and d.candidate == index and d.label in ("", name)]
    by_label = [d for d in written if name and d.label == name]
    found = by_index or by_label
    return found[0] if found else None


def run_command(dep: Deployment) -> str:
    """The command that runs the package's runner: `python deploy/winner/run.py`."""
    return f"python {folder(dep)}/run.py"


def verify_command(dep: Deployment) -> str:
    """The command that checks one package: `planner verify deploy/winner`."""
    return f"planner verify {folder(dep)}"


def code_span(command: str) -> str:
    """A command as inline code on one line, fenced so a backtick inside it survives."""
    one_line = " ".join(command.split())
    fence = "``" if "`" in one_line else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"
